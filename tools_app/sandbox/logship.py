"""Container log shipping: metadata by default, raw output only when switched on.

Raw stdout/stderr can carry secrets that key-name redaction never sees, so
by default only sizes, counts and timing leave the sandbox layer. Shipping
never fails a call: sink errors are swallowed and logged at debug level.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from tools_app.sandbox.protocol import Owner

logger = logging.getLogger("synthorg.sandbox.logs")

LogSink = Callable[[Mapping[str, Any]], None]
EVENT_EXEC = "sandbox.container.exec"
EVENT_TEARDOWN = "sandbox.container.teardown"


def default_sink(event: Mapping[str, Any]) -> None:
    """Ship to the standard logging pipeline (structlog renders it in production)."""
    logger.info(event.get("event", "sandbox.container"), extra={"sandbox": dict(event)})


class ContainerLogShipper:
    """Builds and ships one event per exec and per container teardown."""

    def __init__(
        self, *, sink: LogSink = default_sink, ship_raw: bool = False, max_log_bytes: int = 65536
    ) -> None:
        self.sink = sink
        self.ship_raw = ship_raw
        self.max_log_bytes = max_log_bytes

    def _context(self, owner: Owner | None) -> dict[str, Any]:
        return {
            "agent_id": owner.agent_id if owner else None,
            "task_id": owner.task_id if owner else None,
        }

    def exec_event(
        self,
        *,
        container_id: str,
        owner: Owner | None,
        stdout: bytes,
        stderr: bytes,
        exit_code: int | None,
        duration_ms: int,
        truncated: bool,
    ) -> dict[str, Any]:
        """The event for one exec; raw output only when raw shipping is on."""
        event: dict[str, Any] = {
            "event": EVENT_EXEC,
            "container_id": container_id,
            **self._context(owner),
            "stdout_bytes": len(stdout),
            "stderr_bytes": len(stderr),
            "stdout_lines": stdout.count(b"\n"),
            "stderr_lines": stderr.count(b"\n"),
            "exit_code": exit_code,
            "duration_ms": duration_ms,
            "truncated": truncated,
            "raw": self.ship_raw,
        }
        if self.ship_raw:
            cap = self.max_log_bytes
            event["stdout"] = stdout[:cap].decode("utf-8", "replace")
            event["stderr"] = stderr[:cap].decode("utf-8", "replace")
        return event

    def teardown_event(
        self, *, container: Any, owner: Owner | None, reason: str
    ) -> dict[str, Any] | None:
        """Collect the container's own log (bounded) before removal; None on failure."""
        try:
            data = container.logs(stdout=True, stderr=True, tail=1000)[: self.max_log_bytes]
        except Exception as exc:  # shipping must never fail a call
            logger.debug("container log collection failed: %s", exc)
            return None
        event: dict[str, Any] = {
            "event": EVENT_TEARDOWN,
            "container_id": container.id,
            **self._context(owner),
            "reason": reason,
            "log_bytes": len(data),
            "log_lines": data.count(b"\n"),
            "raw": self.ship_raw,
        }
        if self.ship_raw:
            event["log"] = data.decode("utf-8", "replace")
        return event

    def ship(self, event: Mapping[str, Any] | None) -> None:
        """Hand ``event`` to the sink; errors are logged at debug level and dropped."""
        if event is None:
            return
        try:
            self.sink(event)
        except Exception as exc:  # shipping must never fail a call
            logger.debug("container log shipping failed: %s", exc)
