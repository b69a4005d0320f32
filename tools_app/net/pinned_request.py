"""Point one HTTP request at the checked address while it keeps its name (PURE).

The request keeps its URL's host name for the ``Host`` header and for TLS (SNI and
certificate verification); only the address the connection goes to changes, to
``CheckedEndpoint.pinned_address``. Shared by the httpx transports that connect to
a checked address (``transport.PinnedTransport``, the MCP bridge's async one), which
differ in the httpx package they use (``httpx``, ``httpx2``), so the request is typed
by what is used of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tools_app.net.guard import CheckedEndpoint


class EgressPinMismatchError(RuntimeError):
    """A request reached the transport for a host and port it was not pinned to."""


def default_port(scheme: str) -> int:
    """The port a URL without one goes to."""
    return 443 if scheme == "https" else 80


def pin_request(
    request: Any, endpoint: CheckedEndpoint, mismatch: Callable[[str, int], str]
) -> None:
    """Rewrite ``request`` (an httpx or httpx2 request) to connect to the pinned address.

    Raises EgressPinMismatchError with ``mismatch(host, port)`` when the request is for
    another host or port than ``endpoint``.
    """
    url = request.url
    port = url.port or default_port(url.scheme)
    if url.host != endpoint.host or port != endpoint.port:
        raise EgressPinMismatchError(mismatch(url.host, port))
    # httpx set the Host header from the name when the request was built; keep it.
    request.headers.setdefault("Host", url.netloc.decode("ascii"))
    request.url = url.copy_with(host=endpoint.pinned_address)
    if url.scheme == "https":
        request.extensions = {**request.extensions, "sni_hostname": endpoint.host}
