"""Turn a confined process's outcome into the public SandboxResult."""

from __future__ import annotations

from tools_app.sandbox.protocol import KilledBy, SandboxResult
from tools_app.sandbox.runner import ProcessOutcome


def decode(data: bytes) -> str:
    """Output as text; invalid UTF-8 becomes U+FFFD rather than failing the call."""
    return data.decode("utf-8", errors="replace")


def result_from_outcome(
    backend: str, outcome: ProcessOutcome, *, exit_code: int | None = None
) -> SandboxResult:
    """Build the result of one call from how its process ended."""
    capture = outcome.capture
    return SandboxResult(
        backend=backend,
        exit_code=outcome.exit_code if exit_code is None else exit_code,
        stdout=decode(capture.stdout),
        stderr=decode(capture.stderr),
        duration_ms=outcome.duration_ms,
        timed_out=outcome.killed_by is KilledBy.TIMEOUT,
        killed_by=outcome.killed_by,
        stdout_truncated=capture.stdout_truncated,
        stderr_truncated=capture.stderr_truncated,
        log_metadata={"warm_python": True} if outcome.warm else {},
    )
