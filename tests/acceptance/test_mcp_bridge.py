"""The MCP bridge on a console started as `make run` starts it, with upstream servers.

Real upstream servers, started by the console's worker inside the namespace sandbox: the
reference servers from npm (`server-everything`, `server-filesystem`, installed by
`npm ci` from tests/tools_app/bridge/servers/package-lock.json) and Python servers
written with the official SDK (one with a tool that crashes its process and one that
hangs; one that vanishes while a flag file exists; one with a `network` allowlist naming
the test's own loopback HTTP server and a granted secret). Agents call them over REST and
with the stock MCP client; people decide through the operators' REST endpoint.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sysconfig
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.testing import wait_until
from tests.acceptance.conftest import Console, _private_dir
from tests.acceptance.console import (
    TRACEBACK,
    Credentials,
    copy_var,
    decide,
    make_run_env,
    manage,
    sign_in,
    start_launcher,
    stop_launcher,
)
from tests.acceptance.mcp_calls import invocation_of, rest_call, tools_listed
from tests.tools_app.mcp.conftest import with_mcp
from tests.tools_app.net.servers import LoopbackHttpServer, Reply

SERVERS = Path(__file__).resolve().parents[1] / "tools_app" / "bridge" / "servers"
EVERYTHING = SERVERS / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
FILESYSTEM = SERVERS / "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
# The suite's own site-packages: the Python servers import the SDK from there.
SITE = sysconfig.get_paths()["purelib"]
SLOW_TIMEOUT_SECONDS = 3
# The value of the secret the networked server is started with (never seen by an agent).
SERVICE_TOKEN = "svc-token-" + uuid.uuid4().hex


@pytest.fixture(scope="session")
def reference_servers() -> Path:
    """The npm reference servers, installed from the committed lock file when missing."""
    for program in ("node", "npm"):
        assert shutil.which(program), f"{program} is missing: scripts/require.sh test installs it"
    lock = json.loads((SERVERS / "package-lock.json").read_text())
    wanted = lock["packages"]["node_modules/@modelcontextprotocol/server-everything"]["version"]
    installed = SERVERS / "node_modules/@modelcontextprotocol/server-everything/package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != wanted:
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=SERVERS, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return SERVERS


def _config(flags: Path, web_port: int) -> str:
    return f"""
sandboxing:
  namespace:
    extra_ro_binds: ["{SITE}", "{SERVERS}", "{flags}"]
tools:
  py__slow: {{timeout_seconds: {SLOW_TIMEOUT_SECONDS}}}
mcp_servers:
  - name: py
    transport: stdio
    command: [/usr/bin/python3, "{SERVERS}/py_tools.py", "{SITE}"]
    workspace: agent
    tools:
      deny: [whoami]
      # The admin's word, not the server's readOnlyHint, makes echo a read.
      safety_classes: {{echo: read}}
      action_types: {{echo: "code:read"}}
  - name: everything
    transport: stdio
    command: [node, "{EVERYTHING}"]
    tools:
      allow: [echo, get-tiny-image, get-structured-content, get-resource-reference]
      safety_classes: {{"*": read}}
      action_types: {{"*": "code:read"}}
  - name: files
    transport: stdio
    command: [node, "{FILESYSTEM}", /workspace]
    workspace: agent
    tools: {{allow: [read_text_file, list_directory]}}
  - name: flaky
    transport: stdio
    command: [/usr/bin/python3, "{SERVERS}/py_flaky.py", "{SITE}", "{flags}/down"]
  - name: netpy
    transport: stdio
    command: [/usr/bin/python3, "{SERVERS}/py_net.py", "{SITE}"]
    network: ["127.0.0.1:{web_port}"]
    secrets: {{SERVICE_TOKEN: bridge-service-token}}
"""


@pytest.fixture(scope="module")
def bridged(
    prepared_var: Path, acceptance_root: Path, reference_servers: Path
) -> Iterator[tuple[Console, Path]]:
    """A console whose config names the upstream servers; yields it and the flag dir."""
    _workspaces["root"] = prepared_var / "workspaces"
    root = _private_dir(acceptance_root, "bridge.")
    # Outside /tmp: the sandbox's own /tmp is a private tmpfs over the host's.
    flags = Path(tempfile.mkdtemp(prefix="synthorg-bridge-flags.", dir="/var/tmp"))
    flags.chmod(0o755)
    web = _net["web"] = LoopbackHttpServer()
    web.route("/ok", Reply(body=b"allowed body"))
    web.__enter__()
    config = root / "synthorg.yaml"
    config.write_text(_config(flags, web.port))
    copy_var(prepared_var, root / "var")
    env = make_run_env(root / "var")
    manage(env, "synthorg_secret", "set", "bridge-service-token", stdin=SERVICE_TOKEN)
    manage(
        env, "synthorg_secret", "grant", "bridge-service-token", "--server", "netpy",
        "--host", f"127.0.0.1:{web.port}", "--inject", "bearer",
    )  # fmt: skip
    launcher = start_launcher(
        root / "var",
        root / "launcher.log",
        extra_env={
            "SYNTHORG_CONFIG": str(config),
            "SYNTHORG_BRIDGE_HEALTH_INTERVAL": "2",
            # Waited only while a connection is open: a loaded machine still writes the
            # connection's row with its call.
            "SYNTHORG_BRIDGE_EGRESS_SETTLE_SECONDS": "10",
        },
    )
    try:
        launcher.wait_healthy()
        console = Console(
            launcher=launcher, credentials=Credentials.read(root / "var" / "demo-credentials.txt")
        )
        wait_until(
            lambda: (
                {"py__echo", "files__read_text_file", "flaky__ping", "netpy__env"}
                <= tools_listed(console)
            ),
            timeout=120,
            what="the upstream tools to be discovered",
            poll=0.5,
        )
        yield console, flags
        code = stop_launcher(launcher)
        assert code == 0, launcher.output()[-6000:]
        assert TRACEBACK not in launcher.own_output(), launcher.output()[-6000:]
    finally:
        launcher.kill_everything()
        web.__exit__(None, None, None)
        shutil.rmtree(flags, ignore_errors=True)


_workspaces: dict[str, Path] = {}
_net: dict[str, LoopbackHttpServer] = {}


def _workspace(console: Console, agent: str) -> Path:
    # The demo's agents keep the workspaces of the var/ they were seeded in (the copy's
    # database names those paths).
    return _workspaces["root"] / agent


def test_discovered_tools_are_listed_to_permitted_agents_only(
    bridged: tuple[Console, Path],
) -> None:
    console, _ = bridged
    listed = tools_listed(console)
    assert {"py__echo", "py__note", "everything__get-tiny-image", "files__list_directory"} <= listed
    assert "py__whoami" not in listed, "tools.deny leaves a tool out"
    assert "everything__toggle-simulated-logging" not in listed, "not in tools.allow"
    assert not {n for n in tools_listed(console, "research-bot") if "__" in n}, (
        "the restricted level has no mcp category"
    )
    with console.agent("build-bot") as http:
        body = http.get("/api/v1/tools/py__echo/").json()
    assert body["category"] == "mcp" and body["action_type"] == "code:read"
    assert body["safety_class"] == "read", "the admin's classification gives a read"
    assert body["input_schema"]["properties"]["text"]["type"] == "string"
    with console.agent("build-bot") as http:
        note = http.get("/api/v1/tools/py__note/").json()
    assert (note["action_type"], note["safety_class"]) == ("code:write", "write"), "safe side"

    async def work(session: Any) -> Any:
        return await session.list_tools()

    tools = with_mcp(console.base_url, console.credentials.agents["build-bot"], work)
    by_name = {t.name: t for t in tools.tools}
    assert "py__echo" in by_name and "py__whoami" not in by_name
    assert by_name["py__echo"].input_schema["properties"]["text"]["type"] == "string"


def test_an_allowed_call_runs_upstream_and_is_audited_with_the_server(
    bridged: tuple[Console, Path],
) -> None:
    console, _ = bridged
    word = uuid.uuid4().hex[:8]
    done = rest_call(console, "build-bot", "py__echo", {"text": word})
    assert done["status"] == "succeeded", done
    assert done["result"]["content"] == f"echo: {word}"
    admin = console.person("admin")
    try:
        events = admin.get("/api/v1/audit/events/", params={"tool": "py__echo"}).json()
        own = admin.get("/api/v1/audit/events/", params={"invocation": done["id"]}).json()
    finally:
        admin.close()
    bridge_rows = [e for e in events["results"] if e["kind"] == "mcp.call"]
    assert bridge_rows, events
    data = bridge_rows[0]["data"]
    assert data["server"] == "py" and data["upstream_tool"] == "echo"
    assert len(data["definition_hash"]) == 64
    assert "py_tools.py" in data["server_identity"]
    # The bridge's row is written with the call's end, in the transaction that settles it:
    # the chain holds it just before the call's `invocation.finished`.
    rows = sorted(own["results"], key=lambda e: e["id"])
    kinds = [e["kind"] for e in rows]
    assert kinds[-2:] == ["mcp.call", "invocation.finished"], kinds
    assert rows[-1]["id"] == rows[-2]["id"] + 1
    assert rows[-2]["outcome"] == "ok" and rows[-2]["agent"]["name"] == "build-bot"


def test_a_stock_mcp_client_calls_an_upstream_tool(bridged: tuple[Console, Path]) -> None:
    console, _ = bridged

    async def work(session: Any) -> Any:
        return await session.call_tool("everything__echo", {"message": "through the console"})

    result = with_mcp(console.base_url, console.credentials.agents["build-bot"], work)
    assert result.is_error is False
    assert "through the console" in "\n".join(b.text for b in result.content)


def test_an_agent_without_the_mcp_category_is_denied(bridged: tuple[Console, Path]) -> None:
    console, _ = bridged
    with console.agent("research-bot") as http:
        answer = http.post(
            "/api/v1/invocations/", json={"tool": "py__echo", "arguments": {"text": "x"}}
        )
    # Refused outright: never run (control: build-bot's identical call above succeeds).
    assert answer.status_code in (201, 404), answer.text
    if answer.status_code == 201:
        assert answer.json()["status"] == "denied"


def test_a_write_waits_for_a_person_then_runs_in_the_agents_workspace(
    bridged: tuple[Console, Path],
) -> None:
    console, _ = bridged
    name = f"note-{uuid.uuid4().hex[:8]}.txt"
    first = rest_call(console, "ops-bot", "py__note", {"name": name, "text": "approved"}, wait=0)
    assert first["status"] == "pending_approval", first
    assert not (_workspace(console, "ops-bot") / name).exists(), "nothing runs before a person"
    operator = console.person("operator")
    try:
        decide(operator, first["approval"]["id"], "approve")
    finally:
        operator.close()
    wait_until(
        lambda: invocation_of(console, "ops-bot", first["id"])["status"] == "succeeded",
        timeout=60, what="the approved call to run", poll=0.3,
    )  # fmt: skip
    assert (_workspace(console, "ops-bot") / name).read_text() == "approved"


def test_a_cancelled_call_is_cancelled_upstream(bridged: tuple[Console, Path]) -> None:
    console, _ = bridged
    marker = uuid.uuid4().hex[:8]
    # The tool's timeout is 3 s from the moment the server has the call, so the cancel is
    # sent as soon as the server says it started (its marker file), not at "running" alone,
    # which a cold server start can precede by seconds.
    started = rest_call(console, "build-bot", "py__slow", {"seconds": 60, "marker": marker}, wait=0)
    started_file = _workspace(console, "build-bot") / f"started-{marker}"
    wait_until(started_file.exists, timeout=30, what="the server to start the slow call", poll=0.02)
    assert invocation_of(console, "build-bot", started["id"])["status"] == "running"
    with console.agent("build-bot") as http:
        asked = http.post(f"/api/v1/invocations/{started['id']}/cancel/").json()
    # Running: it stops when the server is told, and ends cancelled with what it said.
    assert asked["status"] in ("running", "cancelled"), asked
    marker_file = _workspace(console, "build-bot") / f"cancelled-{marker}"
    wait_until(marker_file.exists, timeout=30, what="the server to see notifications/cancelled")
    wait_until(
        lambda: invocation_of(console, "build-bot", started["id"])["status"] == "cancelled",
        timeout=30, what="the call to end cancelled", poll=0.3,
    )  # fmt: skip
    ended = invocation_of(console, "build-bot", started["id"])
    assert ended["error"]["code"] == "cancelled", ended


def test_a_hanging_call_times_out_and_is_cancelled_upstream(
    bridged: tuple[Console, Path],
) -> None:
    console, _ = bridged
    marker = uuid.uuid4().hex[:8]
    done = rest_call(console, "build-bot", "py__slow", {"seconds": 60, "marker": marker})
    assert done["status"] == "timed_out", done
    marker_file = _workspace(console, "build-bot") / f"cancelled-{marker}"
    wait_until(marker_file.exists, timeout=30, what="the server to see notifications/cancelled")
    control = rest_call(console, "build-bot", "py__slow", {"seconds": 0.1, "marker": marker + "x"})
    assert control["status"] == "succeeded", control


def test_a_server_that_crashes_mid_call_fails_it_and_is_restarted(
    bridged: tuple[Console, Path],
) -> None:
    console, _ = bridged
    crashed = rest_call(console, "build-bot", "py__crash", {})
    assert crashed["status"] == "failed", crashed
    assert "py" in crashed["error"]["message"], crashed
    again = rest_call(console, "build-bot", "py__echo", {"text": "back"})
    assert again["status"] == "succeeded", again


def test_a_server_error_reaches_the_agent_as_its_message(bridged: tuple[Console, Path]) -> None:
    console, _ = bridged
    failed = rest_call(console, "build-bot", "py__fail", {"why": "quota of widgets"})
    assert failed["status"] == "failed", failed
    assert "upstream says no: quota of widgets" in failed["error"]["message"], failed


def test_every_content_type_is_mapped(bridged: tuple[Console, Path]) -> None:
    console, _ = bridged
    image = rest_call(console, "build-bot", "everything__get-tiny-image", {})
    assert image["status"] == "succeeded", image
    assert "[image image/png" in image["result"]["content"]
    blocks = image["result"]["structured"]["content"]
    assert any(b["type"] == "image" and b["data"] for b in blocks)
    structured = rest_call(
        console, "build-bot", "everything__get-structured-content", {"location": "New York"}
    )
    assert structured["status"] == "succeeded", structured
    assert (
        isinstance(structured["result"]["structured"], dict) and structured["result"]["structured"]
    )
    resource = rest_call(console, "build-bot", "everything__get-resource-reference", {})
    assert resource["status"] == "succeeded", resource
    assert "[resource " in resource["result"]["content"]


def test_the_filesystem_server_is_confined_to_the_agents_workspace(
    bridged: tuple[Console, Path],
) -> None:
    console, _ = bridged
    workspace = _workspace(console, "build-bot")
    (workspace / "inside.txt").write_text("inside the workspace\n")
    inside = rest_call(
        console, "build-bot", "files__read_text_file", {"path": "/workspace/inside.txt"}
    )
    assert inside["status"] == "succeeded", inside
    assert "inside the workspace" in inside["result"]["content"]
    # The server's own check refuses a path outside its root...
    outside = rest_call(console, "build-bot", "files__read_text_file", {"path": "/etc/passwd"})
    assert outside["status"] == "failed", outside
    # ...and the sandbox holds where a server checks nothing: the console's database
    # file is not there (control: the same tool reads a workspace file).
    for secret in (console.var_dir / "synthorg.sqlite3", SERVERS.parents[3] / "manage.py"):
        assert secret.exists()
        leaked = rest_call(console, "build-bot", "py__read_path", {"path": str(secret)})
        assert leaked["status"] == "failed", leaked
        assert "No such file" in leaked["error"]["message"], leaked
    control = rest_call(console, "build-bot", "py__read_path", {"path": "/workspace/inside.txt"})
    assert control["status"] == "succeeded" and "inside" in control["result"]["content"]


def test_a_server_that_vanishes_makes_its_tools_unavailable_with_a_reason(
    bridged: tuple[Console, Path],
) -> None:
    console, flags = bridged
    assert rest_call(console, "build-bot", "flaky__ping", {})["status"] == "succeeded"
    (flags / "down").write_text("down")
    try:

        def refused() -> bool:
            answer = rest_call(console, "build-bot", "flaky__ping", {}, wait=0)
            return answer["status"] == "denied" and "health check" in answer["decision"]["reason"]

        wait_until(refused, timeout=60, what="the vanished server's tool to be refused", poll=1)
        assert "flaky__ping" in tools_listed(console), "unavailable, never silently missing"
    finally:
        (flags / "down").unlink()
    wait_until(
        lambda: rest_call(console, "build-bot", "flaky__ping", {})["status"] == "succeeded",
        timeout=60, what="the server to be back", poll=1,
    )  # fmt: skip


def test_people_pages_do_not_break(bridged: tuple[Console, Path]) -> None:
    console, _ = bridged
    admin: httpx.Client = sign_in(console.base_url, *console.credentials.people["admin"])
    try:
        page = admin.get("/tools/")
        assert page.status_code == 200
        assert "py__echo" in page.text
    finally:
        admin.close()


def test_a_networked_server_reaches_its_allowlist_and_its_secret_never_the_agent(
    bridged: tuple[Console, Path],
) -> None:
    console, _ = bridged
    web = _net["web"]
    allowed = rest_call(console, "build-bot", "netpy__fetch", {"url": web.url("/ok")})
    assert allowed["status"] == "succeeded", allowed
    assert allowed["result"]["content"] == "GOT 200 allowed body", allowed
    # Another loopback address of the same port: refused by the server's own proxy.
    refused = rest_call(
        console, "build-bot", "netpy__fetch", {"url": f"http://127.0.0.2:{web.port}/"}
    )
    assert refused["result"]["content"].startswith("REFUSED 403"), refused
    assert web.count("/ok") == 1 and web.count() == 1
    # Sealed: the server's request to the granted host carried the value...
    assert web.requests[0].header_values("Authorization") == [f"Bearer {SERVICE_TOKEN}"]
    echoed = rest_call(console, "build-bot", "netpy__env", {"name": "SERVICE_TOKEN"})
    assert echoed["status"] == "succeeded", echoed
    content = echoed["result"]["content"]
    # ...while the server itself held the reference only, and the agent reads no value.
    assert "SERVICE_TOKEN=${secret:bridge-service-token}" in content, content
    assert hashlib.sha256(SERVICE_TOKEN.encode()).hexdigest() not in content, content
    encoded = base64.b64encode(SERVICE_TOKEN.encode()).decode().rstrip("=")
    assert SERVICE_TOKEN not in content and encoded not in content, content
    admin = console.person("admin")
    try:
        rows = admin.get("/api/v1/audit/events/", params={"tool": "netpy__fetch"}).json()
        export = admin.get("/audit/export.jsonl").text
    finally:
        admin.close()
    connections = [e for e in rows["results"] if e["kind"] == "egress.connection"]
    by_outcome = {e["outcome"]: e for e in connections}
    assert set(by_outcome) == {"closed", "refused"}, connections
    assert by_outcome["closed"]["data"]["bytes_down"] > len(b"allowed body")
    assert by_outcome["closed"]["invocation_id"] == allowed["id"]
    assert SERVICE_TOKEN not in export and encoded not in export
    assert "bridge-service-token" in export, "each use of the secret is audited by name"
    assert SERVICE_TOKEN not in console.launcher.output()
