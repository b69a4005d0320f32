"""End-to-end latency and sustained throughput of governed read_file calls.

Starts a real daphne and real Celery workers against the database and Redis in the
environment, then measures:
- an allowed read_file (client POST with wait → result) on the subprocess backend,
  p50/p95, and its overhead over running the same tool straight in the sandbox;
- sustained throughput with 2 workers for 30 s: calls/s, errors, lost (submitted but
  not finished when the run has drained).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

import httpx  # noqa: E402

from bench.measure import cpu_of, row  # noqa: E402
from common.settings_config import synthorg_config  # noqa: E402
from common.testing import free_port, http_status, python_argv, running, wait_until  # noqa: E402
from tools_app.builtin.base import ToolContext  # noqa: E402
from tools_app.builtin.file_system.tools import read_file  # noqa: E402
from tools_app.models import Invocation  # noqa: E402
from tools_app.sandbox.factory import build_backend  # noqa: E402
from tools_app.sandbox.protocol import Owner  # noqa: E402
from trust_app.services.agents import agent_create, workspace_grant  # noqa: E402

LATENCY_CALLS = 300
WARMUP = 20
# An agent thinks between calls: the same call, one every this many seconds.
PACED_CALLS = 100
PACED_PAUSE_SECONDS = 0.1
THROUGHPUT_SECONDS = 30
THROUGHPUT_CLIENTS = 24


def make_agent(prefix: str) -> tuple[str, Path]:
    created = agent_create(name=f"{prefix}-{uuid.uuid4().hex[:8]}", access_level="standard")
    workspace = Path(created.agent.workspace)
    (workspace / "notes.txt").write_text("a line of notes\n" * 20)
    workspace_grant(workspace)
    return created.token, workspace


def direct_latency(workspace: Path) -> list[float]:
    """The same read_file straight through the subprocess sandbox, no pipeline."""
    backend = build_backend("subprocess", synthorg_config().sandboxing)
    context = ToolContext(
        agent_id="bench", agent_name="bench", workspace=workspace, sandbox=backend,
        owner=Owner(agent_id="bench"), sub_constraints={"file_system": "project_directory"},
    )  # fmt: skip
    samples = []
    for i in range(WARMUP + LATENCY_CALLS):
        started = time.perf_counter()
        outcome = read_file.run(context, {"path": "notes.txt"})
        elapsed = (time.perf_counter() - started) * 1000
        assert not outcome.is_error, outcome.content
        if i >= WARMUP:
            samples.append(elapsed)
    return samples


def main() -> None:
    env = dict(os.environ, LOG_LEVEL="WARNING", SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE="1000000")
    tmp = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    workers = [
        python_argv(
            "-m", "celery", "-A", "synthorg_site", "worker", "-Q", "sandbox.subprocess",
            "-n", f"bench-{i}-{os.getpid()}@localhost",
            "-l", "WARNING", "--without-gossip", "--without-mingle",
        )
        for i in range(2)
    ]  # fmt: skip
    token, workspace = make_agent("bench-latency")
    direct = direct_latency(workspace)
    with (
        running(daphne, env=env, log_path=tmp / "daphne.log") as web,
        running(workers[0], env=env, log_path=tmp / "w0.log") as w0,
        running(workers[1], env=env, log_path=tmp / "w1.log") as w1,
    ):
        serving = {"daphne": [web.process.pid], "workers": [w0.process.pid, w1.process.pid]}
        wait_until(lambda: http_status(base + "/healthz") in (200, 503), timeout=60, what="daphne")
        body = {"tool": "read_file", "arguments": {"path": "notes.txt"}, "wait": 30}
        headers = {"Authorization": f"Bearer {token}"}
        latency: list[float] = []
        with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
            for i in range(WARMUP + LATENCY_CALLS):
                started = time.perf_counter()
                answer = http.post("/api/v1/invocations/", json=body).json()
                elapsed = (time.perf_counter() - started) * 1000
                if answer.get("status") != "succeeded":
                    raise SystemExit(f"read_file did not succeed: {answer}")
                if i >= WARMUP:
                    latency.append(elapsed)
            paced: list[float] = []
            for _ in range(PACED_CALLS):
                time.sleep(PACED_PAUSE_SECONDS)
                started = time.perf_counter()
                answer = http.post("/api/v1/invocations/", json=body).json()
                paced.append((time.perf_counter() - started) * 1000)
                if answer.get("status") != "succeeded":
                    raise SystemExit(f"read_file did not succeed: {answer}")

        submitted: list[str] = []
        errors = 0
        lock = threading.Lock()
        deadline = time.monotonic() + THROUGHPUT_SECONDS

        def client_loop() -> None:
            nonlocal errors
            client_token, _ = make_agent("bench-load")
            with httpx.Client(base_url=base, timeout=60) as http:
                while time.monotonic() < deadline:
                    response = http.post(
                        "/api/v1/invocations/", json=body,
                        headers={"Authorization": f"Bearer {client_token}"},
                    )  # fmt: skip
                    answer = response.json()
                    with lock:
                        if answer.get("id"):
                            submitted.append(str(answer["id"]))
                        if answer.get("status") != "succeeded":
                            errors += 1

        threads = [threading.Thread(target=client_loop) for _ in range(THROUGHPUT_CLIENTS)]
        cpu_before = {k: cpu_of(pids) for k, pids in serving.items()}
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        cpu_used = {k: cpu_of(pids) - cpu_before[k] for k, pids in serving.items()}
        settled = Invocation.objects.filter(id__in=submitted, status="succeeded").count()
        lost = (
            Invocation.objects.filter(id__in=submitted)
            .exclude(
                status__in=["succeeded", "failed", "denied", "timed_out", "cancelled", "expired"]
            )
            .count()
        )

    overhead = statistics.median(latency) - statistics.median(direct)
    for line in (
        row("read_file end to end (POST wait → result), subprocess", "ms", latency,
            f"{LATENCY_CALLS} sequential calls; overhead over direct p50 {overhead:.1f} ms"),
        row("read_file end to end, one call every 100 ms", "ms", paced,
            f"{PACED_CALLS} calls with a pause before each, as an agent between steps"),
        row("read_file straight in the subprocess sandbox", "ms", direct,
            f"{LATENCY_CALLS} calls, no pipeline"),
        {
            "figure": "sustained read_file throughput, 2 workers",
            "unit": "calls/s",
            "rate": settled / elapsed,
            "note": f"{THROUGHPUT_CLIENTS} clients for {elapsed:.0f}s; {len(submitted)} submitted, "
            f"{errors} errors, {lost} lost; CPU per call: daphne "
            f"{cpu_used['daphne'] * 1000 / max(len(submitted), 1):.1f} ms, workers and their "
            f"sandboxes {cpu_used['workers'] * 1000 / max(len(submitted), 1):.1f} ms",
        },
    ):  # fmt: skip
        print(json.dumps(line))


if __name__ == "__main__":
    main()
