"""The console's own origins: only a page of the console may open its websockets.

A browser sends the page's origin (scheme, host and port) with every websocket
handshake, and the person's cookie with it whatever page asked; the socket is not
covered by CSRF checks. So the handshake is refused unless that origin is one of the
console's, compared whole: a page served from another port of the same host is
another origin (a host-name match alone would let it read the inbox).

The console's origins are ``SYNTHORG_ORIGINS`` when set. Unset, they are what the
other settings imply: ``http://HOST:PORT`` for each host ALLOWED_HOSTS accepts on the
port the connection arrived at, the origin of ``SYNTHORG_CONSOLE_URL`` and each origin
of ``CSRF_TRUSTED_ORIGINS`` (the addresses a proxy in front serves the console at).
"""

from __future__ import annotations

from typing import Any

import structlog
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import validate_host

from common.platform.origins import (
    Origin,
    console_origins_implied,
    origin_parse,
    origins_setting_parse,
)

log = structlog.get_logger("synthorg.http")


def is_console_origin(
    origin: Origin,
    *,
    listed: tuple[Origin, ...],
    implied: frozenset[Origin],
    allowed_hosts: list[str],
    serving_port: int | None,
) -> bool:
    """Whether ``origin`` is one of the console's (see the module's description)."""
    if listed:
        return origin in listed
    if origin in implied:
        return True
    host = f"[{origin.host}]" if ":" in origin.host else origin.host
    return (
        origin.scheme == "http"
        and serving_port is not None
        and origin.port == serving_port
        and validate_host(host, allowed_hosts)
    )


def _origin_headers(scope: dict[str, Any]) -> list[bytes]:
    return [value for name, value in scope.get("headers", []) if name == b"origin"]


def _serving_port(scope: dict[str, Any]) -> int | None:
    server = scope.get("server")
    if isinstance(server, list | tuple) and len(server) == 2 and isinstance(server[1], int):
        return server[1]
    return None


def handshake_origin_allowed(scope: dict[str, Any]) -> tuple[bool, str]:
    """Whether the handshake in ``scope`` comes from a page of the console, and the origin."""
    sent = _origin_headers(scope)
    if len(sent) != 1:  # none (not a browser's page) or several: no single origin to judge
        return False, f"{len(sent)} Origin headers"
    text = sent[0].decode("latin-1")
    origin = origin_parse(text)
    if origin is None:
        return False, text
    allowed = is_console_origin(
        origin,
        listed=origins_setting_parse(settings.SYNTHORG_ORIGINS, name="SYNTHORG_ORIGINS"),
        implied=console_origins_implied(
            console_url=settings.SYNTHORG_CONSOLE_URL, trusted=settings.CSRF_TRUSTED_ORIGINS
        ),
        allowed_hosts=list(settings.ALLOWED_HOSTS),
        serving_port=_serving_port(scope),
    )
    return allowed, str(origin)


class ConsoleOriginValidator:
    """Around the websocket routes: a handshake from any other origin is refused (403)."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            raise ValueError("ConsoleOriginValidator guards websocket connections only")
        allowed, shown = handshake_origin_allowed(scope)
        if allowed:
            await self.application(scope, receive, send)
            return
        log.warning("websocket refused: not the console's origin", origin=shown[:200],
                    path=scope.get("path", ""))  # fmt: skip
        await WebsocketDenier()(scope, receive, send)
