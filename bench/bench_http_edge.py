"""What a refusal at the HTTP edge costs, against a real daphne (no worker needed).

- a malformed JSON body from an agent, answered 400 in the envelope: within the
  per-client audit budget (each one an audit row) and past it (only counted);
- JSON nested 10,000 deep (400, depth limit);
- a chunked body past the size limit (413, counted while it arrives);
- an accepted-shape request for comparison: GET /api/v1/tools/ (200).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

import httpx  # noqa: E402
from django.conf import settings  # noqa: E402

from bench.measure import emit_row, ms_row  # noqa: E402
from common.testing import free_port, http_status, python_argv, running, wait_until  # noqa: E402
from trust_app.services.agents import agent_create  # noqa: E402

CALLS = 200
JSON = {"Content-Type": "application/json"}


def measure(call: Callable[[], httpx.Response], status: int, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        answer = call()
        samples.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == status, (answer.status_code, answer.text[:300])
    return samples


def emit(figure: str, samples: list[float], note: str) -> None:
    emit_row(ms_row(figure, samples, note))


def main() -> None:
    env = dict(os.environ, LOG_LEVEL="WARNING")
    port = free_port()
    log = Path(tempfile.mkdtemp(prefix="bench-http-edge-")) / "daphne.log"
    argv = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    url = f"http://127.0.0.1:{port}"
    budget = settings.SYNTHORG_REFUSAL_AUDIT_PER_MINUTE
    limit = settings.SYNTHORG_MAX_REQUEST_BYTES
    with running(argv, env=env, log_path=log):
        wait_until(lambda: http_status(url + "/healthz") in (200, 503), timeout=60, what="daphne")
        token = agent_create(name=f"bench-edge-{uuid.uuid4().hex[:8]}", access_level="standard")
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token.token}"}, timeout=60
        ) as http:
            measure(lambda: http.get("/api/v1/tools/"), 200, 20)  # warm-up
            emit(
                "edge: GET /api/v1/tools/ (accepted)",
                measure(lambda: http.get("/api/v1/tools/"), 200, CALLS),
                "agent token, lean path",
            )

            def malformed() -> httpx.Response:
                return http.post("/api/v1/invocations/", content=b"{", headers=JSON)

            audited = measure(malformed, 400, budget)
            emit(
                "edge: malformed JSON, audited",
                audited,
                f"first {budget} refusals of the minute: one audit row each",
            )
            emit(
                "edge: malformed JSON, counted",
                measure(malformed, 400, CALLS),
                "past the per-minute budget: a Redis count only",
            )
            deep = b"[" * 10_000 + b"]" * 10_000
            emit(
                "edge: JSON 10,000 deep",
                measure(
                    lambda: http.post("/api/v1/invocations/", content=deep, headers=JSON), 400, 50
                ),
                "refused at the depth limit",
            )

            def chunked() -> Iterator[bytes]:
                piece = b" " * 65536
                for _ in range(limit // len(piece) + 2):
                    yield piece

            emit("edge: chunked body over the limit", measure(
                lambda: http.post("/api/v1/invocations/", content=chunked(), headers=JSON),
                413, 20), f"{limit + 2 * 65536} bytes sent chunked, 413")  # fmt: skip


if __name__ == "__main__":
    main()
