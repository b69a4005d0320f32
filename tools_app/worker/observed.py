"""A sandbox backend seen from outside: its runs timed for /metrics and traced.

The span around each run carries the trace of the call that asked for it (from the
web node, through the Celery task), so a trace shows where a slow call spent its time.
Without a configured tracer provider the span is OpenTelemetry's no-op.
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import trace

from tools_app.sandbox.protocol import ProbeReport, SandboxBackend, SandboxResult, SandboxSpec

_tracer = trace.get_tracer("synthorg.sandbox")


class ObservedSandbox:
    """``inner`` whose every run is timed (synthorg_sandbox_*) and wrapped in a span."""

    def __init__(self, inner: SandboxBackend) -> None:
        self.inner = inner
        self.name = inner.name
        self.isolates_network = inner.isolates_network

    def __getattr__(self, attribute: str) -> Any:
        # Whatever else the backend offers (release, lifecycle, bwrap_argv…) is its own.
        return getattr(self.inner, attribute)

    def run(self, spec: SandboxSpec) -> SandboxResult:
        """Run ``spec`` in the inner backend, timed and traced."""
        from common.platform.metrics.instruments import sandbox_ran

        with _tracer.start_as_current_span(
            "sandbox.run", attributes={"synthorg.sandbox.backend": self.name}
        ) as span:
            started = time.monotonic()
            result = self.inner.run(spec)
            wall = time.monotonic() - started
            span.set_attribute("synthorg.sandbox.exit_code", -1 if result.exit_code is None
                               else result.exit_code)  # fmt: skip
        sandbox_ran(backend=self.name, wall_seconds=wall, command_seconds=result.duration_ms / 1000)
        return result

    def probe(self) -> ProbeReport:
        """The inner backend's probe."""
        return self.inner.probe()

    def close(self) -> None:
        """Close the inner backend."""
        self.inner.close()
