"""ASGI entry point: HTTP through Django (and the MCP gateway at /mcp/), websockets
through Channels."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from common.platform.tracing import tracing_start

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")
# Before Django builds its middleware: the trace middleware goes in first.
tracing_start("web")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402 - needs Django set up first
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from synthorg_site.http_edge import daphne_guard  # noqa: E402
from synthorg_site.http_edge.client_address import ClientAddressMiddleware  # noqa: E402
from synthorg_site.http_edge.origins import ConsoleOriginValidator  # noqa: E402
from synthorg_site.routing import http_application, websocket_urlpatterns  # noqa: E402

daphne_guard.install()

# Outermost: every part below reads the client address this layer decided.
application = ClientAddressMiddleware(
    ProtocolTypeRouter(
        {
            "http": http_application(django_asgi_app),
            # Scheme, host and port of the page's Origin: only the console's own pages.
            "websocket": ConsoleOriginValidator(
                AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
            ),
        }
    )
)
