"""One trace follows a call from the web node through the Celery worker into the sandbox.

The test runs its own OTLP/HTTP collector on loopback, and its own daphne and worker
with the OTEL_* variables pointing at it, on a Redis database of their own (so the
session's untraced worker never takes the call).
"""

from __future__ import annotations

import http.server
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from common.platform.tracing import tracing_configured
from common.testing import free_port, http_status, python_argv, running, wait_until
from synthorg_site.celery import QUEUES
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# A Redis database no other process of the suite uses.
TRACED_REDIS_DB = "7"


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str
    name: str
    service: str


class Collector(http.server.ThreadingHTTPServer):
    spans: list[ReceivedSpan]


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            service = next(
                (a.value.string_value for a in resource_spans.resource.attributes
                 if a.key == "service.name"), "",
            )  # fmt: skip
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.server.spans.append(ReceivedSpan(span.trace_id.hex(), span.name, service))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector(("127.0.0.1", 0), _Handler)
    server.spans = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _own_redis_db(url: str) -> str:
    base, _, query = url.partition("?")
    kept = [p for p in query.split("&") if p and not p.startswith("db=")]
    if base.startswith("unix://"):
        return f"{base}?{'&'.join([*kept, 'db=' + TRACED_REDIS_DB])}"
    head, _, _db = base.rstrip("/").rpartition("/")
    host_only = head if head.count("/") > 2 else base.rstrip("/")
    return f"{host_only}/{TRACED_REDIS_DB}" + (f"?{'&'.join(kept)}" if kept else "")


def test_web_and_worker_spans_share_one_trace_down_to_the_sandbox(
    test_env: dict[str, str], collector: Collector, tmp_path: Path
) -> None:
    env = {
        **test_env,
        "REDIS_URL": _own_redis_db(test_env["REDIS_URL"]),
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": (
            f"http://127.0.0.1:{collector.server_address[1]}/v1/traces"
        ),
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }
    env.pop("OTEL_SERVICE_NAME", None)
    env.pop("OTEL_SDK_DISABLED", None)
    assert tracing_configured(env)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    name = f"traced-{os.getpid()}@localhost"
    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    worker = python_argv(
        "-m", "celery", "-A", "synthorg_site", "worker", "-Q", ",".join(QUEUES),
        "-n", name, "--without-gossip", "--without-mingle", "-l", "INFO",
    )  # fmt: skip
    created = agent_create(name=f"traced-{uuid.uuid4().hex[:10]}", access_level="standard")
    with (
        running(daphne, env=env, log_path=tmp_path / "daphne.log") as web,
        running(worker, env=env, log_path=tmp_path / "worker.log") as work,
    ):
        wait_until(
            lambda: http_status(base + "/healthz") == 200,
            timeout=120,
            what=f"the traced console to be healthy:\n{web.output()[-2000:]}",
        )
        answer = httpx.post(
            base + "/api/v1/invocations/",
            json={"tool": "list_directory", "arguments": {"path": "."}, "wait": 60},
            headers={"Authorization": f"Bearer {created.token}"},
            timeout=90,
        ).json()
        assert answer["status"] == "succeeded", (answer, work.output()[-3000:])

        def one_trace_through_all() -> bool:
            by_trace: dict[str, set[tuple[str, str]]] = {}
            for span in list(collector.spans):
                by_trace.setdefault(span.trace_id, set()).add((span.service, span.name))
            return any(
                any(service == "synthorg-web" for service, _ in seen)
                and any(service == "synthorg-worker" for service, _ in seen)
                and ("synthorg-worker", "sandbox.run") in seen
                for seen in by_trace.values()
            )

        wait_until(
            one_trace_through_all,
            timeout=60,
            what=f"one trace with web, worker and sandbox spans; got {collector.spans[:40]}",
        )
    # Positive control for "off unless configured": without the variables, no tracing.
    assert not tracing_configured({"REDIS_URL": env["REDIS_URL"]})
    assert not tracing_configured({"OTEL_TRACES_EXPORTER": "none"})
    assert not tracing_configured(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}
    )
