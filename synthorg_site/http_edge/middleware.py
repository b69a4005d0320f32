"""Django middleware: /api/ and /mcp/ answer in the error envelope, whatever refused them.

DRF views answer their refusals in the envelope already (tools_app.api.errors).
What Django answers by itself (an unknown path, a malformed UUID in a path, a
wrong method on a plain view, a CSRF failure, a server error, the debug pages)
is an HTML page; on these paths it is replaced by the envelope with the same
status, and audited. A POST without the trailing slash is served at the path
with it (Django would redirect, and a redirect drops the body).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.urls import Resolver404, resolve

from common.envelope import (
    DEFAULT_MESSAGE,
    REFUSAL_MARK,
    RefusalNote,
    code_for_status,
    error_document,
    is_api_path,
)
from common.platform.middleware import SyncAsyncMiddleware
from common.platform.outage import outage_response
from synthorg_site.http_edge.refusals import refusal_audit, refusal_audit_async
from tools_app.agent_view import agent_message, agent_structure

log = structlog.get_logger("synthorg.http")

# How to send a token, in words the output sanitiser does not take for a credential
# (`Authorization: Bearer <…>` reads to it as a header carrying one).
TOKEN_HINT = "send the header `Authorization` with the value `Bearer <your token>`"


def envelope_response(
    status: int, message: str | None = None, details: dict[str, Any] | None = None
) -> JsonResponse:
    code = code_for_status(status)
    # The message can quote the request (its path): it reaches the caller through the
    # same sanitiser as everything else an agent sees.
    text = agent_message(message or (TOKEN_HINT if status == 401 else DEFAULT_MESSAGE[code]))
    shown = agent_structure(details).value if details else details
    response = JsonResponse(error_document(code, text, shown), status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="synthorg"'
    return response


def _matches(path: str, urlconf: Any) -> bool:
    try:
        resolve(path, urlconf)
    except Resolver404:
        return False
    return True


def add_missing_slash(request: HttpRequest) -> None:
    """/api/v1/invocations is served as /api/v1/invocations/ (never a redirect)."""
    path = request.path_info
    if not is_api_path(path) or path.endswith("/"):
        return
    urlconf = getattr(request, "urlconf", None)
    if not _matches(path, urlconf) and _matches(path + "/", urlconf):
        request.path_info = path + "/"
        request.path = request.path + "/"


def _message_for(request: HttpRequest, response: HttpResponseBase) -> tuple[str, dict[str, Any]]:
    status = response.status_code
    if status == 404:
        return (
            f"no endpoint or resource at {request.path}; the API is described at /api/schema/",
            {"path": request.path},
        )
    if status == 405:
        allowed = response.get("Allow", "")
        return (
            f"{request.method} is not allowed on {request.path}; allowed: {allowed or 'none'}",
            {"allowed": [m.strip() for m in allowed.split(",") if m.strip()]},
        )
    if status == 401:
        return TOKEN_HINT, {}
    code = code_for_status(status)
    return DEFAULT_MESSAGE[code], {}


def _needs_envelope(request: HttpRequest, response: HttpResponseBase) -> bool:
    if response.status_code < 400 or not is_api_path(request.path):
        return False
    return "json" not in response.get("Content-Type", "")


def _replacement(request: HttpRequest, response: HttpResponseBase) -> HttpResponse:
    message, details = _message_for(request, response)
    replaced = envelope_response(response.status_code, message, details)
    for header in ("Allow", "Retry-After", "WWW-Authenticate"):
        if header in response:
            replaced[header] = response[header]
    return replaced


def _note_for(request: HttpRequest, response: HttpResponseBase) -> RefusalNote:
    status = response.status_code
    return RefusalNote(
        status=status, code=code_for_status(status), message=_message_for(request, response)[0]
    )


def _audit_fields(note: RefusalNote) -> dict[str, Any]:
    return {
        "status": note.status,
        "code": note.code,
        "message": note.message,
        "agent": note.agent,
        "person": note.person,
    }


def unstorable_query(request: HttpRequest) -> RefusalNote | None:
    """A query parameter holding a NUL character (no database column can hold one)."""
    if not is_api_path(request.path_info) or "%00" not in request.META.get("QUERY_STRING", ""):
        return None
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            shown = name.replace("\x00", "\\x00")[:100]
            return RefusalNote(
                status=400,
                code="invalid_argument",
                message=f"query parameter {shown}: NUL characters are not allowed",
            )
    return None


def _refused_early(note: RefusalNote) -> HttpResponse:
    return envelope_response(note.status, note.message)


class ApiErrorEnvelopeMiddleware(SyncAsyncMiddleware):
    """Outermost on /api/ and /mcp/: the envelope for every error Django answers itself."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """A view that met an outage (the database or Redis away) answers 503 with
        Retry-After; not audited, since the record itself may be what is away."""
        if not is_api_path(request.path):
            return None
        return outage_response(request.path, exception)

    def _call(self, request: HttpRequest) -> Any:
        add_missing_slash(request)
        early = unstorable_query(request)
        if early is not None:
            refusal_audit(request, **_audit_fields(early))
            return _refused_early(early)
        response = self.get_response(request)
        note = getattr(response, REFUSAL_MARK, None)
        if note is not None:
            refusal_audit(request, **_audit_fields(note))
            return response
        if not _needs_envelope(request, response):
            return response
        replaced = _replacement(request, response)
        refusal_audit(request, **_audit_fields(_note_for(request, response)))
        return replaced

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        add_missing_slash(request)
        early = unstorable_query(request)
        if early is not None:
            await refusal_audit_async(request, **_audit_fields(early))
            return _refused_early(early)
        get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]] = self.get_response
        response = await get_response(request)
        note = getattr(response, REFUSAL_MARK, None)
        if note is not None:
            await refusal_audit_async(request, **_audit_fields(note))
            return response
        if not _needs_envelope(request, response):
            return response
        replaced = _replacement(request, response)
        await refusal_audit_async(request, **_audit_fields(_note_for(request, response)))
        return replaced
