"""The browser tools' cost: a cold navigate and a screenshot, each a fresh Chromium.

Every call of ``browser_navigate`` starts Chromium in a new namespace sandbox with a
fresh profile, so each run here is cold: the sandbox, the browser's start, one page
served by a loopback server on the host through the egress proxy (the forwarder in
the sandbox, the proxy's unix socket, the host's loopback), text extraction with the
hidden-text walk, and the browser's end. The same for a viewport screenshot written
to the workspace. Prints one JSON object per figure. Bounded: a fixed number of runs
and a time budget per figure.
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

from bench.measure import emit_row, p50_p95_row, time_runs  # noqa: E402
from common.config.browser import BrowserSection  # noqa: E402
from tools_app.builtin.browser.driving import answer_of, driver_spec  # noqa: E402
from tools_app.egress import LocalEgressGateway, NetworkGrant  # noqa: E402
from tools_app.sandbox.backends.namespace import NamespaceSandbox  # noqa: E402
from tools_app.sandbox.protocol import NetworkPolicy  # noqa: E402

RUNS = 20
BUDGET_SECONDS = 120.0
PAGE = (
    b"<!doctype html><title>Bench page</title><body><h1>Heading</h1>"
    + b"".join(b"<p>Paragraph %d with <a href='/p%d'>a link</a>.</p>" % (i, i) for i in range(200))
    + b"<p style='color:#fff'>hidden</p></body>"
)


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: object) -> None:
        pass


def call(
    backend: NamespaceSandbox,
    workspace: Path,
    egress_dir: Path,
    request: dict[str, object],
    *,
    carry_profile: bool = False,
) -> Callable[[], object]:
    """One driver run; with ``carry_profile``, each run is handed the profile the one
    before packed (``browser.profile: per_agent_session``, as the worker hands it)."""
    section = BrowserSection()
    carried = {"packed": b""}

    def run() -> object:
        full = dict(request)
        stdin = b""
        if carry_profile:
            stdin = carried["packed"]
            full["profile"] = {"bytes": len(stdin), "max_bytes": section.profile_max_bytes}
        spec = driver_spec(
            section,
            full,
            workspace,
            writes=request["action"] == "screenshot",
            network=NetworkPolicy.PROXY,
            egress_dir=egress_dir,
            stdin=stdin,
        )
        answer = answer_of(backend.run(spec), float(str(request["timeout_seconds"])))
        if carry_profile:
            carried["packed"] = base64.b64decode(str(answer["profile"]))
        return answer

    return run


def main() -> None:
    if os.geteuid() == 0:
        script = Path(__file__).resolve().parents[1] / "docker" / "ensure-sandbox-user.sh"
        subprocess.run(["sh", str(script)], check=True, capture_output=True)
    workspace = Path(tempfile.mkdtemp(prefix="synthorg-bench-browser-"))
    workspace.chmod(0o777)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    backend = NamespaceSandbox()
    gateway = LocalEgressGateway(agent_name="bench")
    grant = NetworkGrant(mode="allowlist_only", allowed_hosts=(f"127.0.0.1:{port}",))
    base = {
        "url": f"http://127.0.0.1:{port}/",
        "wait_until": "load",
        "timeout_seconds": 30.0,
        "viewport": {"width": 1280, "height": 800},
    }
    try:
        with gateway.session(grant) as egress:
            for action, figure, carry in (
                ("navigate", "browser_navigate cold (fresh Chromium, 200-paragraph page)", False),
                (
                    "navigate",
                    "browser_navigate with the agent's session profile carried in and out",
                    True,
                ),
                ("screenshot", "browser_screenshot cold (viewport PNG into the workspace)", False),
            ):
                request = dict(base, action=action)
                run = call(backend, workspace, egress.directory, request, carry_profile=carry)
                samples = time_runs(run, RUNS, warmup=1, budget_seconds=BUDGET_SECONDS)
                note = f"{len(samples)} runs, namespace sandbox, through the egress proxy"
                emit_row(p50_p95_row(figure, samples, note))
    except Exception as exc:
        print(json.dumps({"figure": "browser", "error": str(exc)}), flush=True)
    finally:
        server.shutdown()
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    main()
