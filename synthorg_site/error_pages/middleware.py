"""A page answered 405 by Django (an empty body) gets the console's 405 page instead."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from common.envelope import is_api_path
from common.platform.middleware import SyncAsyncMiddleware
from synthorg_site.error_pages.views import error_page


def _needs_page(request: HttpRequest, response: HttpResponseBase) -> bool:
    if response.status_code != 405 or is_api_path(request.path):
        return False  # /api/ and /mcp/ keep the JSON envelope
    return not getattr(response, "content", b"")  # a view that explained itself keeps it


def _page(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    allowed = response.get("Allow", "")
    page = error_page(
        request,
        405,
        reason=f"{request.method} is not answered here; this address takes "
        f"{allowed or 'no method'}.",
        allowed=allowed,
    )
    if allowed:
        page["Allow"] = allowed
    return page


class MethodNotAllowedPageMiddleware(SyncAsyncMiddleware):
    """Innermost, so the person is known when the page is drawn."""

    def _call(self, request: HttpRequest) -> Any:
        response = self.get_response(request)
        return _page(request, response) if _needs_page(request, response) else response

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]] = self.get_response
        response = await get_response(request)
        if not _needs_page(request, response):
            return response
        return await sync_to_async(_page)(request, response)
