"""What the MCP bridge adds to an upstream call, and what starting a stdio server costs.

A Python MCP server written with the official SDK (tests/tools_app/bridge/servers/
py_tools.py, its read-only `echo`) runs in the namespace sandbox in every case:

- direct: this process holds one session to the server (started exactly as the bridge
  starts it) and calls `echo`: the warm call with no console in between;
- bridged: an agent calls `py__echo` over REST (`wait`) through a real daphne and a
  real Celery worker whose config names the server: authentication, decision, audit,
  the queue, the worker's warm pool, sanitising, storing;
- cold start: starting the sandboxed server and its `initialize` handshake;
- cold start with `network`: the same, the server given its egress proxy as the pool
  gives it (the proxy started first, the server under the forwarder), and the proxy
  stopped after: the added cost of a `network` allowlist.

The same server's tools over Streamable HTTP (tests/tools_app/bridge/servers/
py_remote.py under uvicorn on loopback, allowlisted by IP:port) give the remote figures:
its warm `echo` called directly through the bridge's own pinned, guarded client, and
`remote__echo` end to end through the same console.

`--starts` measures the two cold starts only (no console).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import sysconfig
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
from common.config.mcp import McpServer  # noqa: E402
from common.config.sandbox import SandboxingConfig  # noqa: E402
from common.testing import free_port, http_status, python_argv, running, wait_until  # noqa: E402
from tools_app.bridge.connect import open_session  # noqa: E402
from tools_app.bridge.egress import ServerEgress  # noqa: E402
from trust_app.services.agents import agent_create  # noqa: E402

CALLS = 200
WARMUP = 10
COLD_STARTS = 10
SERVERS = Path(__file__).resolve().parent.parent / "tests" / "tools_app" / "bridge" / "servers"
SITE = sysconfig.get_paths()["purelib"]
COMMAND = ["/usr/bin/python3", str(SERVERS / "py_tools.py"), SITE]
REMOTE = SERVERS / "py_remote.py"


def remote_entry(port: int) -> dict[str, object]:
    return {
        "name": "remote",
        "transport": "http",
        "url": f"http://127.0.0.1:{port}/mcp",
        "network": [f"127.0.0.1:{port}"],
    }


def sandboxing() -> SandboxingConfig:
    return SandboxingConfig.model_validate({"namespace": {"extra_ro_binds": [SITE, str(SERVERS)]}})


async def direct() -> tuple[list[float], list[float]]:
    server = McpServer(name="py", transport="stdio", command=tuple(COMMAND))
    cold: list[float] = []
    for _ in range(COLD_STARTS):
        started = time.perf_counter()
        async with open_session(server, workspace=None, sandboxing=sandboxing()) as session:
            cold.append((time.perf_counter() - started) * 1000)
            await session.send_ping()
    warm: list[float] = []
    async with open_session(server, workspace=None, sandboxing=sandboxing()) as session:
        for i in range(WARMUP + CALLS):
            started = time.perf_counter()
            await session.call_tool("echo", {"text": f"call {i}"})
            if i >= WARMUP:
                warm.append((time.perf_counter() - started) * 1000)
    return cold, warm


async def remote_direct(port: int) -> list[float]:
    """Warm calls of the remote server's `echo` on one session of the bridge's client."""
    server = McpServer.model_validate(remote_entry(port))
    warm: list[float] = []
    async with open_session(server, workspace=None, sandboxing=sandboxing()) as session:
        for i in range(WARMUP + CALLS):
            started = time.perf_counter()
            await session.call_tool("echo", {"text": f"call {i}"})
            if i >= WARMUP:
                warm.append((time.perf_counter() - started) * 1000)
    return warm


async def cold_starts(*, network: bool) -> tuple[list[float], list[float]]:
    """Start and initialize the server ``COLD_STARTS`` times (with its proxy or not), then
    stop it: the start times and the stop times."""
    entry: dict[str, object] = {"name": "py", "transport": "stdio", "command": COMMAND}
    if network:
        entry["network"] = ["127.0.0.1:9"]
    server = McpServer.model_validate(entry)
    start: list[float] = []
    stop: list[float] = []
    for _ in range(COLD_STARTS):
        began = time.perf_counter()
        egress = ServerEgress(server) if network else None
        try:
            async with open_session(
                server, workspace=None, sandboxing=sandboxing(),
                egress_dir=egress.directory if egress is not None else None,
            ) as session:  # fmt: skip
                start.append((time.perf_counter() - began) * 1000)
                await session.send_ping()
                ending = time.perf_counter()
        finally:
            if egress is not None:
                egress.close()
        stop.append((time.perf_counter() - ending) * 1000)
    return start, stop


def bridged(tmp: Path, remote_port: int) -> dict[str, list[float]]:
    """End to end samples of `py__echo` (stdio) and `remote__echo` (http), by tool."""
    config = tmp / "synthorg.yaml"
    config.write_text(
        json.dumps(
            {
                "sandboxing": {"namespace": {"extra_ro_binds": [SITE, str(SERVERS)]}},
                "mcp_servers": [
                    {"name": "py", "transport": "stdio", "command": COMMAND},
                    remote_entry(remote_port),
                ],
            }
        )
    )
    env = dict(
        os.environ,
        LOG_LEVEL="WARNING",
        SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE="1000000",
        SYNTHORG_CONFIG=str(config),
    )
    from synthorg_site.celery import QUEUES

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    worker = python_argv(
        "-m", "celery", "-A", "synthorg_site", "worker", "-Q", ",".join(QUEUES),
        "-n", f"bench-bridge-{os.getpid()}@localhost",
        "-l", "WARNING", "--without-gossip", "--without-mingle",
    )  # fmt: skip
    created = agent_create(
        name=f"bench-bridge-{uuid.uuid4().hex[:8]}", access_level="standard", autonomy="full"
    )
    headers = {"Authorization": f"Bearer {created.token}"}
    samples: dict[str, list[float]] = {"py__echo": [], "remote__echo": []}
    with (
        running(daphne, env=env, log_path=tmp / "daphne.log"),
        running(worker, env=env, log_path=tmp / "worker.log"),
        httpx.Client(base_url=base, headers=headers, timeout=60) as http,
    ):
        wait_until(lambda: http_status(base + "/healthz") == 200, timeout=90, what="the console")

        def listed() -> bool:
            tools = {t["name"] for t in http.get("/api/v1/tools/").json()["tools"]}
            return set(samples) <= tools

        wait_until(listed, timeout=120, what="both echo tools to be discovered", poll=0.5)
        for tool, taken in samples.items():
            for i in range(WARMUP + CALLS):
                body = {"tool": tool, "arguments": {"text": f"call {i}"}, "wait": 30}
                started = time.perf_counter()
                answer = http.post("/api/v1/invocations/", json=body).json()
                elapsed = (time.perf_counter() - started) * 1000
                assert answer["status"] == "succeeded", answer
                if i >= WARMUP:
                    taken.append(elapsed)
    return samples


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def starts() -> None:
    cores = os.cpu_count()
    for network in (False, True):
        start, stop = asyncio.run(cold_starts(network=network))
        what = "with network: egress proxy + forwarder" if network else "no network"
        note = f"{COLD_STARTS} starts, {cores} cores"
        print(json.dumps(row(f"mcp bridge: stdio cold start to initialized, {what} "
                             "(namespace)", start, note)))  # fmt: skip
        print(json.dumps(row(f"mcp bridge: stdio server stop, {what} (namespace)", stop, note)))


def main() -> None:
    if "--starts" in sys.argv[1:]:
        starts()
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-bridge-"))
    cold, warm = asyncio.run(direct())
    port = free_port()
    remote = [sys.executable, str(REMOTE), str(port), str(free_port()), str(tmp)]
    with running(remote, env=os.environ, log_path=tmp / "remote.log"):
        wait_until(lambda: listening(port), timeout=60, what="the remote MCP server")
        remote_warm = asyncio.run(remote_direct(port))
        through = bridged(tmp, port)
    cores = os.cpu_count()
    print(json.dumps(row("mcp bridge: stdio server cold start (namespace)", cold,
                         f"{COLD_STARTS} starts + initialize, {cores} cores")))  # fmt: skip
    print(json.dumps(row("mcp bridge: warm call, server called directly", warm,
                         f"{CALLS} calls of echo on one session")))  # fmt: skip
    print(json.dumps(row("mcp bridge: read-only call end to end (REST wait)", through["py__echo"],
                         f"{CALLS} calls of py__echo via daphne + 1 worker")))  # fmt: skip
    print(json.dumps(row("mcp bridge: remote http server, warm call called directly",
                         remote_warm, f"{CALLS} calls of echo, Streamable HTTP on loopback, "
                         "through the bridge's pinned client")))  # fmt: skip
    print(json.dumps(row("mcp bridge: remote http read-only call end to end (REST wait)",
                         through["remote__echo"],
                         f"{CALLS} calls of remote__echo via daphne + 1 worker, warm "
                         "session")))  # fmt: skip


if __name__ == "__main__":
    main()
