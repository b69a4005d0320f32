"""Connections and charts end to end through the public API, with a real daphne and worker.

Figures:
- ``external_data_request`` (client POST with wait → result) reading a small JSON answer
  from a loopback API, through the whole path (decision, queue, worker, the connection's
  rate and concurrency limits of every agent and of the agent, the SSRF guard, audit),
  p50/p95; and the same request made straight to the loopback API (a new connection
  each time, as the tool makes), so the difference is what governing it costs;
- ``chart_render`` of 20 inline rows (matplotlib in the namespace sandbox, PNG and SVG
  written to the workspace), p50/p95, with the ``analytics`` section on.
Prints one JSON object per figure. Bounded: fixed counts, loopback only.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

import httpx  # noqa: E402

from bench.measure import emit_row, ms_row  # noqa: E402
from common.testing import free_port, http_status, python_argv, running, wait_until  # noqa: E402
from trust_app.models import AgentPermissions  # noqa: E402
from trust_app.services.agents import agent_create, workspace_grant  # noqa: E402

CALLS = 200
CHARTS = 40
WARMUP = 10
ANSWER = json.dumps({"id": 7, "status": "paid", "lines": [{"sku": "a", "qty": 2}] * 4}).encode()
ROWS = [{"day": day, "units": (day * 7) % 13, "returns": day % 3} for day in range(1, 21)]


class _Api(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)


def _config(tmp: Path, api_port: int) -> Path:
    config = tmp / "synthorg.yaml"
    config.write_text(
        json.dumps(
            {
                "connections": [
                    {
                        "name": "bench",
                        "base_url": f"http://127.0.0.1:{api_port}/api",
                        "private_network": True,
                        "operations": [{"method": "GET", "path": "/invoices/{id}"}],
                        # Limits no run reaches, so each call takes all four.
                        "rate_limit": "999999/min",
                        "max_concurrency": 8,
                        "per_agent": {"rate_limit": "999998/min", "max_concurrency": 4},
                    }
                ],
                "analytics": {},
            }
        )
    )
    return config


def _direct(port: int, path: str) -> list[float]:
    samples = []
    for i in range(WARMUP + CALLS):
        started = time.perf_counter()
        # A new TCP connection each time, as the tool opens one per request.
        connection = HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", path, headers={"Accept": "application/json"})
        response = connection.getresponse()
        body = json.loads(response.read())
        connection.close()
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status == 200 and body["id"] == 7
        if i >= WARMUP:
            samples.append(elapsed)
    return samples


def _governed(
    http: httpx.Client, tool: str, arguments: Mapping[str, object], calls: int
) -> list[float]:
    samples = []
    for i in range(WARMUP + calls):
        body = {"tool": tool, "arguments": arguments, "wait": 60}
        started = time.perf_counter()
        answer = http.post("/api/v1/invocations/", json=body).json()
        elapsed = (time.perf_counter() - started) * 1000
        if answer.get("status") != "succeeded":
            raise SystemExit(f"{tool} did not succeed: {json.dumps(answer)[:2000]}")
        if i >= WARMUP:
            samples.append(elapsed)
    return samples


def main() -> None:
    api = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    api.daemon_threads = True
    threading.Thread(target=api.serve_forever, args=(0.05,), daemon=True).start()
    api_port = int(api.server_address[1])
    tmp = Path(tempfile.mkdtemp(prefix="bench-connections-"))
    env = dict(
        os.environ,
        LOG_LEVEL="WARNING",
        SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE="1000000",
        SYNTHORG_CONFIG=str(_config(tmp, api_port)),
    )
    from synthorg_site.celery import QUEUES

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    worker = python_argv(
        "-m", "celery", "-A", "synthorg_site", "worker", "-Q", ",".join(QUEUES),
        "-n", f"bench-connections-{os.getpid()}@localhost",
        "-l", "WARNING", "--without-gossip", "--without-mingle",
    )  # fmt: skip
    created = agent_create(
        name=f"bench-conn-{uuid.uuid4().hex[:8]}", access_level="standard", autonomy="full"
    )
    workspace_grant(Path(created.agent.workspace))
    AgentPermissions.objects.create(agent=created.agent, sub_constraints={"connections": ["bench"]})
    direct = _direct(api_port, "/api/invoices/7")
    request = {"connection": "bench", "method": "GET", "path": "/invoices/7"}
    chart = {"data": ROWS, "kind": "line", "x": "day", "y": ["units", "returns"], "title": "units"}
    with (
        running(daphne, env=env, log_path=tmp / "daphne.log"),
        running(worker, env=env, log_path=tmp / "worker.log"),
        httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {created.token}"}, timeout=120
        ) as http,
    ):
        wait_until(lambda: http_status(base + "/healthz") == 200, timeout=90, what="the console")
        governed = _governed(http, "external_data_request", request, CALLS)
        charts = _governed(http, "chart_render", chart, CHARTS)
    api.shutdown()
    overhead = sorted(governed)[len(governed) // 2] - sorted(direct)[len(direct) // 2]
    emit_row(
        ms_row(
            "external_data_request end to end (POST wait → result)",
            governed,
            f"{CALLS} sequential reads of a {len(ANSWER)} B JSON answer from a loopback API, "
            f"1 worker, rate and concurrency limits of every agent and of the agent taken; "
            f"p50 {overhead:.1f} ms over direct",
        )
    )
    emit_row(
        ms_row(
            "the same GET straight to the loopback API",
            direct,
            f"{CALLS} requests (http.client), a new connection each as the tool makes, no console",
        )
    )
    emit_row(
        ms_row(
            "chart_render end to end (POST wait → result)",
            charts,
            f"{CHARTS} line charts of {len(ROWS)} inline rows, 2 series, PNG and SVG written; "
            "namespace sandbox, 1 worker",
        )
    )


if __name__ == "__main__":
    main()
