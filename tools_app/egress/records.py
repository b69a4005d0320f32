"""PURE: what the proxy remembers about each connection, for the audit trail."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class EgressProtocol(enum.StrEnum):
    """How the sandboxed client asked for the connection."""

    CONNECT = "http-connect"
    HTTP = "http-forward"
    SOCKS5 = "socks5"
    UNKNOWN = "unknown"


class EgressOutcome(enum.StrEnum):
    """How a connection ended."""

    CLOSED = "closed"
    """Allowed, relayed, and closed by one side."""
    REFUSED = "refused"
    """The policy (or the guard) refused the destination; nothing was sent."""
    INVALID = "invalid"
    """The client's request could not be read (bad syntax, unsupported command)."""
    FAILED = "failed"
    """Allowed, but the destination could not be reached."""
    CUT = "cut"
    """Allowed, then ended by a limit (idle, duration, bytes) or by the call ending."""


@dataclass(frozen=True, slots=True)
class ConnectionRecord:
    """One connection through the proxy, as it goes into one AuditEvent."""

    protocol: EgressProtocol
    host: str
    port: int | None
    address: str
    outcome: EgressOutcome
    reason: str
    bytes_up: int
    bytes_down: int
    duration_ms: int
    secrets: tuple[str, ...] = ()
    """Names of the call's sealed secrets that cover this destination."""
    sealed_requests: int = 0
    """Requests sent on with those secrets added."""

    def as_data(self) -> dict[str, object]:
        """The record as JSON-ready audit data."""
        return {
            "protocol": self.protocol.value,
            "host": self.host,
            "port": self.port,
            "address": self.address,
            "bytes_up": self.bytes_up,
            "bytes_down": self.bytes_down,
            **(
                {"secrets": list(self.secrets), "sealed_requests": self.sealed_requests}
                if self.secrets
                else {}
            ),
        }
