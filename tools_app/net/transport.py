"""An httpx transport that connects to the address the guard checked.

The request keeps its URL's host name for the ``Host`` header and for TLS (SNI
and certificate verification), but the TCP connection goes to the pinned IP, so
resolving the name again — and getting another answer — cannot happen. Given a
deadline, every socket operation ends by it (``deadline``).
"""

from __future__ import annotations

import ssl

import httpx

from tools_app.net.deadline import DeadlineBackend, WallClockDeadline
from tools_app.net.guard import CheckedEndpoint
from tools_app.net.pinned_request import EgressPinMismatchError, pin_request

__all__ = ["EgressPinMismatchError", "PinnedTransport"]


class PinnedTransport(httpx.BaseTransport):
    """Sends every request to ``endpoint.pinned_address``; refuses other destinations."""

    def __init__(
        self,
        endpoint: CheckedEndpoint,
        *,
        verify: ssl.SSLContext | bool = True,
        deadline: WallClockDeadline | None = None,
    ) -> None:
        self.endpoint = endpoint
        # retries=0: a retry must never be a way around the guard's single resolution.
        self._inner = httpx.HTTPTransport(verify=verify, retries=0, http2=False)
        if deadline is not None:
            # httpx takes no network backend of its own; its pool does, and opens
            # every connection through it (the slow-body tests fail if this stops).
            pool = self._inner._pool
            pool._network_backend = DeadlineBackend(pool._network_backend, deadline)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Rewrite the connection address to the pinned IP and send."""
        endpoint = self.endpoint
        pin_request(
            request,
            endpoint,
            lambda host, port: (
                f"transport pinned to {endpoint.host}:{endpoint.port} was asked for {host}:{port}"
            ),
        )
        return self._inner.handle_request(request)

    def close(self) -> None:
        """Close the pooled connections."""
        self._inner.close()
