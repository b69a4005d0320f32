"""The agent API's own HTTP path: agent-token requests skip the people's middleware.

Agents authenticate with a bearer token and send no cookies, so sessions,
CSRF, the signed-in person and flash messages mean nothing to them. Under
ASGI each of Django's classic middleware hops to a thread and back twice per
request; for an agent call that is most of the cost of the request. So an
agent-token request without cookies to an agent endpoint is served by a
handler whose middleware is only what applies to it: the request id and the
same security, common and framing headers as every other response, run on
the event loop. Everything else (people, cookies, other paths) goes through
the full stack.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware

from common.platform.tracing import otel_middleware
from trust_app.tokens.bearer import token_kind

AGENT_API_PREFIXES = ("/api/v1/me/", "/api/v1/tools/", "/api/v1/invocations/")

AGENT_API_MIDDLEWARE = [
    "synthorg_site.agent_http.SecurityHeadersMiddleware",
    "common.platform.logs.RequestIdMiddleware",
    "synthorg_site.http_edge.middleware.ApiErrorEnvelopeMiddleware",
    "synthorg_site.agent_http.CommonHeadersMiddleware",
    "synthorg_site.agent_http.FrameHeadersMiddleware",
]


class _OnTheLoop:
    """Run a classic middleware's hooks on the event loop instead of in a thread.

    Only for middleware whose hooks read the request and settings and touch
    neither the database nor the session.
    """

    get_response: Any

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        response = None
        if hasattr(self, "process_request"):
            response = self.process_request(request)
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        return response


class SecurityHeadersMiddleware(_OnTheLoop, SecurityMiddleware):
    """SecurityMiddleware's redirects and headers."""


class CommonHeadersMiddleware(_OnTheLoop, CommonMiddleware):
    """CommonMiddleware's checks and Content-Length."""


class FrameHeadersMiddleware(_OnTheLoop, XFrameOptionsMiddleware):
    """X-Frame-Options, as on every response."""


class AgentApiHandler(ASGIHandler):
    """Django's ASGI handler with the agent API's middleware."""

    def load_middleware(self, is_async: bool = False) -> None:
        # Built once, when the application is created, before it serves.
        everyone = settings.MIDDLEWARE
        # Traced agent calls keep their trace: the instrumentation's middleware comes along.
        settings.MIDDLEWARE = [*otel_middleware(list(everyone)), *AGENT_API_MIDDLEWARE]
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = everyone


def is_agent_call(scope: dict[str, Any]) -> bool:
    """An agent endpoint, an agent bearer token, and no cookies."""
    if scope.get("type") != "http" or not str(scope.get("path", "")).startswith(AGENT_API_PREFIXES):
        return False
    token = None
    for name, value in scope.get("headers", ()):
        if name == b"cookie":
            return False
        if name == b"authorization":
            if token is not None:
                return False  # two Authorization headers: let the full stack judge
            token = value
    if token is None:
        return False
    scheme, _, plaintext = token.decode("latin-1").partition(" ")
    return scheme.lower() == "bearer" and token_kind(plaintext.strip()) == "agent"


def agent_api_split(everyone_app: Any) -> Any:
    """An ASGI app sending agent calls to the lean handler, the rest to ``everyone_app``."""
    agent_app = AgentApiHandler()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if is_agent_call(scope):
            await agent_app(scope, receive, send)
        else:
            await everyone_app(scope, receive, send)

    return app
