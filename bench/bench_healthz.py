"""Baseline: the round trip of /healthz through daphne, p50/p95 over 1,000 requests.

Starts a real daphne and a real Celery worker (so /healthz answers 200 with every
part up) against the database and Redis in the environment, then sends the requests
one after another over one keep-alive connection.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import pct as percentile
from common.testing import free_port, http_status, python_argv, running, wait_until

REQUESTS = 1000
WARMUP = 50


def main() -> None:
    env = dict(os.environ, LOG_LEVEL="WARNING")
    port = free_port()
    tmp = Path(tempfile.mkdtemp(prefix="bench-healthz-"))
    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    worker_name = f"bench-{os.getpid()}@localhost"
    worker = python_argv(
        "-m", "celery", "-A", "synthorg_site", "worker", "-Q", "default",
        "-n", worker_name, "-l", "WARNING",
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/healthz"
    with (
        running(daphne, env=env, log_path=tmp / "daphne.log"),
        running(worker, env=env, log_path=tmp / "worker.log"),
    ):
        wait_until(lambda: http_status(url) == 200, timeout=60, what="/healthz to turn 200")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        samples: list[float] = []
        for i in range(WARMUP + REQUESTS):
            started = time.perf_counter()
            conn.request("GET", "/healthz")
            response = conn.getresponse()
            response.read()
            elapsed = (time.perf_counter() - started) * 1000
            if response.status != 200:
                raise SystemExit(f"/healthz answered {response.status}")
            if i >= WARMUP:
                samples.append(elapsed)
        conn.close()
    print(
        json.dumps(
            {
                "figure": "GET /healthz through daphne (keep-alive)",
                "unit": "ms",
                "p50": statistics.median(samples),
                "p95": percentile(samples, 0.95),
                "p99": percentile(samples, 0.99),
                "rate": len(samples) / (sum(samples) / 1000),
                "note": f"{REQUESTS} sequential requests; rate is requests/s",
            }
        )
    )


if __name__ == "__main__":
    main()
