"""Optional OpenTelemetry traces: a call followed from the web node through the worker
and into the sandbox.

Off unless the standard variables ask for it: ``OTEL_TRACES_EXPORTER`` (``otlp`` or
``console``; ``none`` turns it off) or an OTLP endpoint
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``);
``OTEL_SDK_DISABLED=true`` wins over both. When on, each process (daphne, and each
Celery prefork child) gets a tracer provider exporting in batches (``OTEL_BSP_*``),
and Django, Celery (the trace context rides in the task's headers), psycopg and
redis are instrumented. The sandbox run is a span of its own (tools_app.worker.observed).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import structlog

log = structlog.get_logger(__name__)

_started: dict[str, object] = {}


def tracing_configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the OTEL_* variables ask for traces."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )
    return bool(exporter or endpoint)


def _exporter(name: str) -> object:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if name not in ("", "otlp"):
        raise ValueError(f"OTEL_TRACES_EXPORTER={name!r} is not supported; use otlp, console, none")
    # http/protobuf: the OTLP exporter the console ships (no gRPC stack to install).
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def tracing_start(role: str) -> bool:
    """Start tracing in this process as ``role`` (web, worker) when configured; once.

    Must run before Django builds its middleware (web) and after a prefork child is
    forked (worker), so the batch exporter's thread lives in the process that uses it.
    """
    if _started.get("pid") == os.getpid() or not tracing_configured():
        return bool(_started.get("pid") == os.getpid())
    from opentelemetry import trace
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

    exporter_name = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    try:
        exporter = _exporter(exporter_name)
    except ValueError as exc:
        # A typo must not stop the console; it says why there are no traces.
        log.error("tracing_not_started", reason=str(exc))
        return False
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: f"synthorg-{role}"}
    provider = TracerProvider(resource=Resource.create(attributes))
    assert isinstance(exporter, SpanExporter)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    for instrumentor in (DjangoInstrumentor(), CeleryInstrumentor(), RedisInstrumentor()):
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument(tracer_provider=provider)
    psycopg = PsycopgInstrumentor()
    if not psycopg.is_instrumented_by_opentelemetry:
        psycopg.instrument(tracer_provider=provider, enable_commenter=False)
    _started.update(pid=os.getpid(), provider=provider)
    log.info("tracing_started", role=role, exporter=exporter_name or "otlp")
    return True


def tracing_flush() -> None:
    """Send what this process's spans are waiting in the batch (before a process exits)."""
    provider = _started.get("provider")
    if provider is not None and _started.get("pid") == os.getpid():
        provider.force_flush()  # type: ignore[attr-defined]


def otel_middleware(everyone: list[str]) -> list[str]:
    """The OpenTelemetry middleware Django's instrumentation put in MIDDLEWARE, if any,
    for handlers that build their own middleware list."""
    return [name for name in everyone if name.startswith("opentelemetry.")]
