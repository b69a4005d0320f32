"""GET /metrics scrape time with 200 tools: p50/p95/p99 over 200 scrapes through daphne.

Four writer processes (standing in for a web node and three Celery prefork children)
each record, for 200 tool names, a decision per outcome, a terminal call per status and
the latency histograms, into a fresh multiprocess directory, and stay alive (a starting
process removes the files of dead ones once none lives); then daphne serves /metrics
from that directory (summing every process's files, plus the database and Redis state
read at scrape time) to one keep-alive client on loopback.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import pct as percentile
from common.testing import BASE_DIR, free_port, http_status, python_argv, running, wait_until

TOOLS = 200
WRITERS = 4
SCRAPES = 200
WARMUP = 10

WRITE = """
import django, sys
django.setup()
from common.platform.metrics.instruments import call_decided, call_settled, sandbox_ran
tools = int(sys.argv[1])
for n in range(tools):
    tool = f"bench_tool_{n:03d}"
    for outcome in ("allow", "deny", "require_approval"):
        call_decided(tool=tool, outcome=outcome, seconds=0.004)
    for status in ("succeeded", "failed", "denied", "expired", "timed_out", "cancelled"):
        call_settled(tool=tool, status=status, created_at=None)
for backend in ("subprocess", "namespace", "docker"):
    sandbox_ran(backend=backend, wall_seconds=0.2, command_seconds=0.15)
print("written", flush=True)
sys.stdin.read()
"""


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-metrics-"))
    env = dict(
        os.environ,
        LOG_LEVEL="WARNING",
        PROMETHEUS_MULTIPROC_DIR=str(tmp / "multiproc"),
        DJANGO_SETTINGS_MODULE="synthorg_site.settings",
    )
    writers = []
    for _ in range(WRITERS):
        writer = subprocess.Popen(
            python_argv("-c", WRITE, str(TOOLS)), cwd=BASE_DIR, env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip
        writers.append(writer)
        assert writer.stdout is not None
        if writer.stdout.readline().strip() != "written":
            raise SystemExit("a writer process failed")
    try:
        _scrapes(env, tmp)
    finally:
        for writer in writers:
            assert writer.stdin is not None
            writer.stdin.close()
            writer.wait(timeout=60)


def _scrapes(env: dict[str, str], tmp: Path) -> None:
    port = free_port()
    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    url = f"http://127.0.0.1:{port}/metrics"
    with running(daphne, env=env, log_path=tmp / "daphne.log"):
        wait_until(lambda: http_status(url) == 200, timeout=60, what="/metrics to answer")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        samples: list[float] = []
        size = 0
        for i in range(WARMUP + SCRAPES):
            started = time.perf_counter()
            conn.request("GET", "/metrics")
            response = conn.getresponse()
            body = response.read()
            elapsed = (time.perf_counter() - started) * 1000
            if response.status != 200:
                raise SystemExit(f"/metrics answered {response.status}")
            if i >= WARMUP:
                samples.append(elapsed)
                size = len(body)
        conn.close()
    series = sum(1 for line in body.decode().splitlines() if line and not line.startswith("#"))
    print(
        json.dumps(
            {
                "figure": f"GET /metrics, {TOOLS} tools written by {WRITERS} processes",
                "unit": "ms",
                "p50": statistics.median(samples),
                "p95": percentile(samples, 0.95),
                "p99": percentile(samples, 0.99),
                "rate": len(samples) / (sum(samples) / 1000),
                "note": f"{SCRAPES} sequential scrapes; {series} samples, {size // 1024} KiB "
                "per scrape; rate is scrapes/s",
            }
        )
    )


if __name__ == "__main__":
    main()
