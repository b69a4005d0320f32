"""ASGI: every request's client address is decided once, here, before anything reads it.

daphne runs without ``--proxy-headers`` (which believes the leftmost
``X-Forwarded-For`` of anyone): the scope's ``client`` is the socket's peer. This
middleware replaces it with the client that the proxies named in
``SYNTHORG_TRUSTED_PROXIES`` report (common/platform/client_address.py), so Django's
``REMOTE_ADDR``, the MCP gateway, the body limit, websockets, audit rows, a token's
``last_used_address``, the per-client refusal budget and the sign-in throttle all read
one address. The peer itself stays in the scope for the one check that needs it
(``/metrics`` from loopback), with whether any forwarding header came along.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest

from common.platform.client_address import (
    FORWARDING_HEADERS,
    Network,
    client_address,
    forwarded_for_entries,
    is_trusted,
    parse_address,
    trusted_networks,
)

Scope = dict[str, Any]

PEER_KEY = "synthorg.peer"
FORWARDED_KEY = "synthorg.forwarded"
_FORWARDING = frozenset(name.encode() for name in FORWARDING_HEADERS)
_SCHEMES = {"http": {"http": "http", "https": "https"}, "websocket": {"http": "ws", "https": "wss"}}


def trusted_proxies() -> tuple[Network, ...]:
    """The networks of SYNTHORG_TRUSTED_PROXIES (checked when the settings loaded)."""
    return trusted_networks(settings.SYNTHORG_TRUSTED_PROXIES)


def _header_values(headers: Any, name: bytes) -> list[str]:
    return [bytes(value).decode("latin-1") for key, value in headers if key == name]


def client_scope(scope: Scope, trusted: tuple[Network, ...]) -> Scope:
    """The scope with ``client`` set to the request's client, and the peer kept beside it."""
    peer_host, peer_port = (scope.get("client") or ("", 0))[:2]
    headers = scope.get("headers") or ()
    found = client_address(
        peer=str(peer_host or ""),
        forwarded_for=forwarded_for_entries(_header_values(headers, b"x-forwarded-for")),
        trusted=trusted,
    )
    changed: Scope = {
        PEER_KEY: str(peer_host or ""),
        FORWARDED_KEY: any(key in _FORWARDING for key, _ in headers),
    }
    if found.address:  # a unix socket has no peer address: nothing to say
        changed["client"] = (found.address, 0 if found.via_proxy else peer_port)
    # The scheme the client used, as the trusted proxy in front says (it ended TLS).
    if is_trusted(parse_address(str(peer_host or "")), trusted):
        said = _header_values(headers, b"x-forwarded-proto")
        scheme = _SCHEMES.get(str(scope.get("type")), {}).get(
            said[-1].strip().lower() if said else ""
        )
        if scheme:
            changed["scheme"] = scheme
    return {**scope, **changed}


class ClientAddressMiddleware:
    """Outermost ASGI layer: HTTP and websocket scopes get their client decided."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.trusted = trusted_proxies()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope.get("type") in ("http", "websocket"):
            scope = client_scope(scope, self.trusted)
        await self.app(scope, receive, send)


def request_is_local(request: HttpRequest) -> bool:
    """The request came straight from loopback: its peer is a loopback address and no
    header says a proxy forwarded it (a proxy on the same host is loopback too)."""
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict) and PEER_KEY in scope:
        peer, forwarded = str(scope[PEER_KEY]), bool(scope[FORWARDED_KEY])
    else:  # served without the ASGI layer (Django's test client): META says the same
        peer = str(request.META.get("REMOTE_ADDR") or "")
        forwarded = any(
            "HTTP_" + name.upper().replace("-", "_") in request.META for name in FORWARDING_HEADERS
        )
    address = parse_address(peer)
    return address is not None and address.is_loopback and not forwarded
