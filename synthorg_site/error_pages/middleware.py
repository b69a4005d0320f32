"""The console's pages where Django would answer by itself: 405 (an empty body) and 404.

Django draws a 404 with ``handler404`` only when DEBUG is off; with DEBUG on (``make
run``) it shows its debug page, which lists the URL patterns. Here a page's 404 is the
console's page in every mode: a path no pattern matches is answered before the view,
and an Http404 a view raises is answered by ``process_exception``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase
from django.urls import Resolver404, resolve

from common.envelope import is_api_path
from common.platform.middleware import SyncAsyncMiddleware
from synthorg_site.error_pages.views import error_page, page_404


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


def _no_pattern(request: HttpRequest) -> Resolver404 | None:
    """The resolver's refusal of a page's path, or None when a view answers it."""
    if is_api_path(request.path_info):
        return None  # /api/ and /mcp/ keep the JSON envelope
    try:
        resolve(request.path_info, getattr(request, "urlconf", None))
    except Resolver404 as exc:
        return exc
    return None


class NotFoundPageMiddleware(SyncAsyncMiddleware):
    """Inside the session and authentication middleware, so the page knows the person;
    inside CommonMiddleware, which still turns the 404 into a redirect to the path with
    its slash when that one exists."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> Any:
        if isinstance(exception, Http404) and not is_api_path(request.path):
            return page_404(request, exception)
        return None

    def _call(self, request: HttpRequest) -> Any:
        missing = _no_pattern(request)
        return page_404(request, missing) if missing is not None else self.get_response(request)

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        missing = _no_pattern(request)
        if missing is not None:
            return await sync_to_async(page_404)(request, missing)
        get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]] = self.get_response
        return await get_response(request)
