"""One base for middlewares that run in both worlds: WSGI (sync) and ASGI (async).

Django hands a middleware the next handler; when that handler is a coroutine
function the middleware must be one too (``markcoroutinefunction``), or Django wraps
it in a thread. A subclass writes ``_call`` (sync) and ``_acall`` (async); the base
picks one per request by what it was built around.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction


class SyncAsyncMiddleware:
    """A middleware that stays sync under WSGI and async under ASGI."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[..., Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: Any) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        return self._call(request)

    def _call(self, request: Any) -> Any:
        raise NotImplementedError

    async def _acall(self, request: Any) -> Any:
        raise NotImplementedError
