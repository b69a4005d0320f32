"""PURE: the numbers one egress proxy holds every connection to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProxyLimits:
    """Ceilings per connection (and per proxy); defaults are safe for tool calls."""

    handshake_timeout_seconds: float = 10.0
    """How long a client may take to say where it wants to go."""
    connect_timeout_seconds: float = 10.0
    """How long the proxy waits for the destination to accept (and for DNS)."""
    idle_timeout_seconds: float = 60.0
    """A connection with no bytes either way for this long is cut."""
    max_connection_seconds: float = 600.0
    """No connection lives longer, however busy."""
    max_bytes_per_connection: int = 1024 * 1024 * 1024
    """Bytes either way (summed) after which a connection is cut."""
    max_head_bytes: int = 64 * 1024
    """Largest HTTP request head (request line and headers) the proxy reads."""
    max_connections: int = 64
    """Connections open at once through one proxy; one more waits for none: it is refused
    with the reason (an HTTP 503 naming the limit, or SOCKS5 general failure) and audited."""
    chunk_bytes: int = 64 * 1024
    """Read size of the relay."""
