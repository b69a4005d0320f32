"""The Content-Security-Policy of every answer: the console's own scripts and styles only.

The policy itself is ``CONTENT_SECURITY_POLICY`` in the settings (django-csp): scripts,
styles, images and connections from the console's origin, no inline script or style,
no plugin, no framing, no <base>, forms sent to the console only. An injected inline
script or event handler does not run, and a style attribute is not applied.

What the settings cannot say is the websocket's address: the approvals socket is opened
at ``ws[s]://`` + the page's own host, and a browser matches ``'self'`` against
ws:/wss: only under CSP level 3. So each answer allows, besides ``'self'``, the socket
form of the origin the page was asked at (the Host header, as Django validated it) and
of each origin the console is configured to be served at (SYNTHORG_ORIGINS, the address
of SYNTHORG_CONSOLE_URL and CSRF_TRUSTED_ORIGINS: behind a proxy, the browser's origin).
The socket's handshake is judged on its own (synthorg_site/http_edge/origins.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress

from csp.middleware import CSPMiddleware, PolicyParts
from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponseBase

from common.platform.origins import (
    Origin,
    console_origins_implied,
    origin_parse,
    origins_setting_parse,
)

SOCKET_SCHEMES = {"http": "ws", "https": "wss"}


def socket_sources(origins: Iterable[Origin]) -> list[str]:
    """``ws://`` for each http origin and ``wss://`` for each https one, in a stable order."""
    sources = {f"{SOCKET_SCHEMES[o.scheme]}://{str(o).split('://', 1)[1]}" for o in origins}
    return sorted(sources)


def page_origins(host: str) -> list[Origin]:
    """The page's own origin either way: a proxy in front may have ended TLS for it."""
    found = [origin_parse(f"{scheme}://{host}") for scheme in ("http", "https")]
    return [origin for origin in found if origin is not None]


def configured_origins() -> list[Origin]:
    listed = origins_setting_parse(settings.SYNTHORG_ORIGINS, name="SYNTHORG_ORIGINS")
    implied = console_origins_implied(
        console_url=settings.SYNTHORG_CONSOLE_URL, trusted=settings.CSRF_TRUSTED_ORIGINS
    )
    return [*listed, *implied]


class ConsoleCSPMiddleware(CSPMiddleware):
    """django-csp's middleware, with the console's socket origins added to connect-src."""

    def get_policy_parts(
        self, request: HttpRequest, response: HttpResponseBase, report_only: bool = False
    ) -> PolicyParts:
        parts = super().get_policy_parts(request, response, report_only)
        if report_only:
            return parts
        origins = configured_origins()
        # A Host the console does not serve is refused (400): the configured origins only.
        with suppress(DisallowedHost):
            origins += page_origins(request.get_host())
        update = dict(parts.update or {})
        connect = update.get("connect-src") or []
        connect = [connect] if isinstance(connect, str) else list(connect)
        update["connect-src"] = connect + socket_sources(origins)
        parts.update = update
        return parts
