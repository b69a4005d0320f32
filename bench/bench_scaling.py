"""Throughput by workers and web nodes: the same sustained read_file load against
1 and 2 web nodes (daphne) and 1, 2 and 4 worker processes, all on this machine.

Each configuration starts its own processes on the database and Redis in the
environment, runs CLIENTS agents calling read_file (wait for the result) for
SECONDS, and prints calls/s and CPU per call of the web nodes and of the workers
with their sandboxes. On a machine with few cores the curve flattens once web nodes,
workers and sandboxes together use every core: the note of each row says how busy
the machine was.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

import httpx  # noqa: E402

from bench.measure import cpu_of  # noqa: E402
from common.testing import free_port, http_status, python_argv, running, wait_until  # noqa: E402
from tools_app.models import Invocation  # noqa: E402
from trust_app.services.agents import agent_create, workspace_grant  # noqa: E402

SECONDS = 20
CLIENTS = 16
WEB_NODES = (1, 2)
WORKERS = (1, 2, 4)
BODY = {"tool": "read_file", "arguments": {"path": "notes.txt"}, "wait": 30}


def _agent() -> str:
    created = agent_create(name=f"bench-scale-{uuid.uuid4().hex[:8]}", access_level="standard")
    workspace = Path(created.agent.workspace)
    (workspace / "notes.txt").write_text("a line of notes\n" * 20)
    workspace_grant(workspace)
    return created.token


def _busy_cores(seconds: float, before: float) -> float:
    """Cores busy on average since ``before`` (all processes), from /proc/stat."""
    return (_machine_busy() - before) / seconds


def _machine_busy() -> float:
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    values = [int(v) for v in fields]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values) - idle) / os.sysconf("SC_CLK_TCK")


def _wait_for(base: str) -> None:
    wait_until(lambda: http_status(base + "/healthz") == 200, timeout=120, what=base)


def measure(web_nodes: int, workers: int, env: dict[str, str], tmp: Path) -> dict[str, object]:
    tokens = [_agent() for _ in range(CLIENTS)]
    with ExitStack() as stack:
        bases, web_pids, worker_pids = [], [], []
        for n in range(web_nodes):
            port = free_port()
            argv = python_argv(
                "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
            )
            web = stack.enter_context(running(argv, env=env, log_path=tmp / f"web{n}.log"))
            bases.append(f"http://127.0.0.1:{port}")
            web_pids.append(web.process.pid)
        for n in range(workers):
            argv = python_argv(
                "-m", "celery", "-A", "synthorg_site", "worker", "-Q", "sandbox.subprocess",
                "-n", f"scale-{n}-{os.getpid()}@localhost",
                "-l", "WARNING", "--without-gossip", "--without-mingle",
            )  # fmt: skip
            worker = stack.enter_context(running(argv, env=env, log_path=tmp / f"w{n}.log"))
            worker_pids.append(worker.process.pid)
        for base in bases:
            _wait_for(base)
        # Warm every node and worker before counting.
        for base, token in zip(itertools.cycle(bases), tokens[: 4 * workers], strict=False):
            with httpx.Client(base_url=base, timeout=60) as http:
                http.post("/api/v1/invocations/", json=BODY,
                          headers={"Authorization": f"Bearer {token}"})  # fmt: skip

        submitted: list[str] = []
        errors = 0
        lock = threading.Lock()
        deadline = time.monotonic() + SECONDS

        def client(index: int) -> None:
            nonlocal errors
            headers = {"Authorization": f"Bearer {tokens[index]}"}
            with httpx.Client(base_url=bases[index % len(bases)], timeout=60) as http:
                while time.monotonic() < deadline:
                    answer = http.post("/api/v1/invocations/", json=BODY, headers=headers).json()
                    with lock:
                        if answer.get("id"):
                            submitted.append(str(answer["id"]))
                        if answer.get("status") != "succeeded":
                            errors += 1

        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        web_before, workers_before = cpu_of(web_pids), cpu_of(worker_pids)
        machine_before = _machine_busy()
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        busy = _busy_cores(elapsed, machine_before)
        web_cpu = cpu_of(web_pids) - web_before
        worker_cpu = cpu_of(worker_pids) - workers_before
    done = Invocation.objects.filter(id__in=submitted, status="succeeded").count()
    calls = max(len(submitted), 1)
    return {
        "figure": f"read_file throughput, {web_nodes} web node(s), {workers} worker(s)",
        "unit": "calls/s",
        "rate": done / elapsed,
        "note": (
            f"{CLIENTS} clients {elapsed:.0f}s; {len(submitted)} calls, {errors} not succeeded; "
            f"CPU/call web {web_cpu * 1000 / calls:.1f} ms, workers+sandboxes "
            f"{worker_cpu * 1000 / calls:.1f} ms; machine busy {busy:.2f} of "
            f"{os.cpu_count()} cores"
        ),
    }


def main() -> None:
    env = dict(os.environ, LOG_LEVEL="WARNING", SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE="1000000")
    tmp = Path(tempfile.mkdtemp(prefix="bench-scaling-"))
    for web_nodes, workers in itertools.product(WEB_NODES, WORKERS):
        print(json.dumps(measure(web_nodes, workers, env, tmp)), flush=True)


if __name__ == "__main__":
    main()
