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

Each request's thread-sensitive work (Django runs it on one thread per request) goes
to a single-thread executor taken from a shelf and put back after the request, instead
of a thread started and joined for every request as Django's handler does: about a
third of a millisecond of CPU per call (bench/bench_engine.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext
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


# Idle executors kept for the next requests; more at once are made, and shut down after.
SHELF_SIZE = 64


class OneThreadExecutor(ThreadPoolExecutor):
    """One thread, and whether any work given to it is still unfinished."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="agent-call")
        self._count = threading.Lock()
        self._unfinished = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._count:
            self._unfinished += 1
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._finished(None)
            raise
        # Registered before the caller's own callbacks: counted as finished before the
        # awaiting request resumes.
        future.add_done_callback(self._finished)
        return future

    def _finished(self, _: object) -> None:
        with self._count:
            self._unfinished -= 1

    @property
    def idle(self) -> bool:
        with self._count:
            return self._unfinished == 0


class ExecutorShelf:
    """Single-thread executors lent to one request at a time.

    An executor comes back only idle: a request whose client went away may leave its
    sync work running (it cannot be interrupted); that executor's thread ends after the
    work, and the next request never waits behind it.
    """

    def __init__(self, size: int = SHELF_SIZE) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._idle: list[OneThreadExecutor] = []

    def take(self) -> OneThreadExecutor:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return OneThreadExecutor()

    def give_back(self, executor: OneThreadExecutor) -> None:
        if executor.idle:
            with self._lock:
                if len(self._idle) < self.size:
                    self._idle.append(executor)
                    return
        executor.shutdown(wait=False)

    def idle_count(self) -> int:
        with self._lock:
            return len(self._idle)


class AgentApiHandler(ASGIHandler):
    """Django's ASGI handler with the agent API's middleware, its threads kept."""

    def __init__(self) -> None:
        super().__init__()
        self.shelf = ExecutorShelf()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self.shelf.take()
        try:
            # As Django's handler, but the request's thread comes from the shelf.
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            self.shelf.give_back(executor)

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
