"""The error envelope of API.md for every refusal the REST API makes.

Each refusal is marked on its response for the edge middleware to audit
(synthorg_site.http_edge.middleware): the handler runs on the event loop for
async views, where it may not touch the database.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response

from common.envelope import REFUSAL_MARK, RefusalNote, code_for_status, error_document
from common.errors import RateLimitedError, SynthOrgError
from tools_app.agent_view import agent_message, agent_structure

_DRF_CODES: tuple[tuple[type[Exception], str, int], ...] = (
    (exceptions.NotAuthenticated, "unauthenticated", 401),
    (exceptions.AuthenticationFailed, "unauthenticated", 401),
    (exceptions.PermissionDenied, "forbidden", 403),
    (exceptions.NotFound, "not_found", 404),
    (exceptions.MethodNotAllowed, "method_not_allowed", 405),
    (exceptions.UnsupportedMediaType, "unsupported_media_type", 415),
    (exceptions.Throttled, "rate_limited", 429),
)


def envelope(
    code: str, message: str, status: int, details: dict[str, Any] | None = None
) -> Response:
    # A refusal can quote what it refuses (a tool name, an argument): it reaches the
    # caller through the same sanitiser as tool output.
    message = agent_message(message)
    details = agent_structure(details).value if details else details
    response = Response(error_document(code, message, details), status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="synthorg"'
    return response


def _refusal(exc: Exception, request: Any) -> tuple[str, str, int, dict[str, Any]] | None:
    """(code, message, status, details) for an exception the API answers, else None."""
    if isinstance(exc, SynthOrgError):
        return exc.code, exc.message, exc.http_status, exc.details
    if isinstance(exc, RequestDataTooBig):
        return "payload_too_large", "the request body is too large", 413, {}
    if isinstance(exc, Http404):
        return "not_found", "not found", 404, {}
    if isinstance(exc, exceptions.ValidationError):
        fields = field_errors(exc.detail)
        message = "; ".join(f"{where}: {' '.join(texts)}" for where, texts in fields.items())
        return "invalid_argument", message or "the request is not valid", 400, {"fields": fields}
    if isinstance(exc, exceptions.MethodNotAllowed):
        method = getattr(request, "method", "") or "this method"
        return "method_not_allowed", f"{method} is not allowed here", 405, {}
    if isinstance(exc, exceptions.UnsupportedMediaType):
        sent = getattr(request, "content_type", "") or "no Content-Type"
        return (
            "unsupported_media_type",
            f"the body is sent as {sent[:100]}; send it as application/json",
            415,
            {"allowed": ["application/json"]},
        )
    for kind, code, status in _DRF_CODES:
        if isinstance(exc, kind):
            return code, _text(exc), status, {}
    if isinstance(exc, exceptions.APIException):
        return code_for_status(exc.status_code), _text(exc), exc.status_code, {}
    return None


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's exception handler, speaking the envelope; anything else is a server error
    (logged by Django, answered in the envelope by the edge middleware)."""
    refusal = _refusal(exc, context.get("request"))
    if refusal is None:
        return None
    code, message, status, details = refusal
    view = context.get("view")
    if isinstance(exc, exceptions.MethodNotAllowed) and view is not None:
        allowed = [m for m in view.allowed_methods if m != "OPTIONS"]
        message = f"{message}; allowed: {', '.join(allowed)}"
        details = {"allowed": allowed}
    response = envelope(code, message, status, details)
    if isinstance(exc, RateLimitedError):
        response["Retry-After"] = str(exc.retry_after)
    wait = getattr(exc, "wait", None)
    if isinstance(exc, exceptions.Throttled) and wait:
        response["Retry-After"] = str(int(wait))
    if isinstance(exc, exceptions.MethodNotAllowed) and view is not None:
        response["Allow"] = ", ".join(view.allowed_methods)
    agent, person = _caller(context.get("request"))
    setattr(
        response,
        REFUSAL_MARK,
        RefusalNote(status=status, code=code, message=message, agent=agent, person=person),
    )
    return response


def _caller(request: Any) -> tuple[Any | None, Any | None]:
    """The agent or person DRF authenticated, without authenticating again."""
    user = getattr(request, "_user", None)
    if user is None or not getattr(user, "is_authenticated", False):
        return None, None
    agent = getattr(user, "agent", None)
    return (agent, None) if agent is not None else (None, user)


def field_errors(detail: Any, where: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail as {"calls[1].tool": ["This field is required."]}."""
    found: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            if key == "non_field_errors":
                path = where or "body"
            elif isinstance(key, int) or str(key).isdigit():
                path = f"{where or 'body'}[{key}]"
            else:
                path = f"{where}.{key}" if where else str(key)
            found.update(field_errors(value, path))
    elif isinstance(detail, list):
        texts = [str(item) for item in detail if not isinstance(item, (dict, list))]
        if texts:
            found.setdefault(where or "body", []).extend(texts)
        for index, item in enumerate(detail):
            if isinstance(item, (dict, list)) and item:
                found.update(field_errors(item, f"{where or 'body'}[{index}]"))
    elif detail is not None:
        found.setdefault(where or "body", []).append(str(detail))
    return found


def _text(exc: Exception) -> str:
    detail = getattr(exc, "detail", None)
    if isinstance(detail, (dict, list)):
        return "; ".join(f"{k}: {' '.join(v)}" for k, v in field_errors(detail).items())
    return str(detail if detail is not None else exc)


class JsonOnlyNegotiation(DefaultContentNegotiation):
    """An Accept header the API cannot satisfy gets JSON anyway, not a 406 page."""

    def select_renderer(self, request: Any, renderers: Any, format_suffix: Any = None) -> Any:
        if len(renderers) == 1:
            # The answer is that renderer whatever the Accept header says: no need to
            # parse the header on every request.
            return renderers[0], renderers[0].media_type
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except exceptions.NotAcceptable:
            return renderers[0], renderers[0].media_type
