"""What the MCP gateway adds to a call: MCP tools/call against REST, same read_file.

Starts a real daphne and a real Celery worker against the database and Redis in the
environment, then sends the same allowed read_file 300 times each way, alternating
REST (`POST /api/v1/invocations/` with `wait`) and MCP (`tools/call` to /mcp/, one
JSON-RPC POST as a stateless client sends it), both from one httpx client. The
difference of the two is the gateway's own cost (authentication, message check, SDK
dispatch, rendering the CallToolResult). On a loaded machine the latencies are
noisy, so the web server's own CPU time per call is measured too, over a block of
calls each way (CPU time barely depends on what else the machine runs).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

import httpx  # noqa: E402

from bench.measure import ms_row as row  # noqa: E402
from common.testing import free_port, http_status, python_argv, running, wait_until  # noqa: E402
from trust_app.services.agents import agent_create, workspace_grant  # noqa: E402

CALLS = 300
WARMUP = 20
CPU_BLOCK_CALLS = 150


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds a process has used so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    env = dict(os.environ, LOG_LEVEL="WARNING", SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE="1000000")
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    worker = python_argv(
        "-m", "celery", "-A", "synthorg_site", "worker", "-Q", "sandbox.subprocess",
        "-n", f"bench-mcp-{os.getpid()}@localhost",
        "-l", "WARNING", "--without-gossip", "--without-mingle",
    )  # fmt: skip
    created = agent_create(name=f"bench-mcp-{uuid.uuid4().hex[:8]}", access_level="standard")
    workspace = Path(created.agent.workspace)
    (workspace / "notes.txt").write_text("a line of notes\n" * 20)
    workspace_grant(workspace)
    rest_body = {"tool": "read_file", "arguments": {"path": "notes.txt"}, "wait": 30}
    headers = {
        "Authorization": f"Bearer {created.token}",
        "Accept": "application/json, text/event-stream",
    }
    rest: list[float] = []
    mcp: list[float] = []
    cpu: dict[str, float] = {}
    with (
        running(daphne, env=env, log_path=tmp / "daphne.log") as web,
        running(worker, env=env, log_path=tmp / "worker.log"),
        httpx.Client(base_url=base, headers=headers, timeout=60) as http,
    ):
        wait_until(lambda: http_status(base + "/healthz") == 200, timeout=90, what="the console")
        for i in range(WARMUP + CALLS):
            started = time.perf_counter()
            answer = http.post("/api/v1/invocations/", json=rest_body).json()
            rest_ms = (time.perf_counter() - started) * 1000
            if answer.get("status") != "succeeded":
                raise SystemExit(f"REST read_file did not succeed: {answer}")
            message = {
                "jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": "read_file", "arguments": {"path": "notes.txt"}},
            }  # fmt: skip
            started = time.perf_counter()
            reply = http.post("/mcp/", json=message).json()
            mcp_ms = (time.perf_counter() - started) * 1000
            result = reply.get("result") or {}
            if result.get("isError") is not False:
                raise SystemExit(f"MCP read_file did not succeed: {reply}")
            if i >= WARMUP:
                rest.append(rest_ms)
                mcp.append(mcp_ms)
        for way in ("rest", "mcp"):
            before = cpu_seconds(web.process.pid)
            for i in range(CPU_BLOCK_CALLS):
                if way == "rest":
                    http.post("/api/v1/invocations/", json=rest_body).raise_for_status()
                else:
                    message = {
                        "jsonrpc": "2.0", "id": i, "method": "tools/call",
                        "params": {"name": "read_file", "arguments": {"path": "notes.txt"}},
                    }  # fmt: skip
                    http.post("/mcp/", json=message).raise_for_status()
            cpu[way] = (cpu_seconds(web.process.pid) - before) * 1000 / CPU_BLOCK_CALLS
    added = [m - r for m, r in zip(mcp, rest, strict=True)]
    gap = statistics.median(mcp) - statistics.median(rest)
    for line in (
        row("read_file over REST (POST wait → result)", rest,
            f"{CALLS} calls alternated with MCP, one worker"),
        row("read_file over MCP (tools/call → CallToolResult)", mcp,
            f"{CALLS} calls alternated with REST; p50 {gap:+.2f} ms against REST"),
        row("MCP minus REST, call by call", added,
            "the gateway's own cost per call (each MCP call minus the REST call before it)"),
        {"figure": "web server CPU per read_file, REST", "unit": "ms", "p50": cpu["rest"],
         "note": f"daphne's CPU time over {CPU_BLOCK_CALLS} calls, divided by the calls"},
        {"figure": "web server CPU per read_file, MCP", "unit": "ms", "p50": cpu["mcp"],
         "note": f"the same over {CPU_BLOCK_CALLS} tools/call; "
                 f"{cpu['mcp'] - cpu['rest']:+.2f} ms against REST"},
    ):  # fmt: skip
        print(json.dumps(line))


if __name__ == "__main__":
    main()
