"""The error envelope of API.md for every refusal the agent API makes."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response

from common.errors import RateLimitedError, SynthOrgError

_DRF_CODES: tuple[tuple[type[Exception], str, int], ...] = (
    (exceptions.NotAuthenticated, "unauthenticated", 401),
    (exceptions.AuthenticationFailed, "unauthenticated", 401),
    (exceptions.PermissionDenied, "forbidden", 403),
    (exceptions.NotFound, "not_found", 404),
    (exceptions.Throttled, "rate_limited", 429),
)


def envelope(
    code: str, message: str, status: int, details: dict[str, Any] | None = None
) -> Response:
    response = Response(
        {"error": {"code": code, "message": message, "details": details or {}}}, status=status
    )
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="synthorg"'
    return response


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's exception handler, speaking the envelope."""
    if isinstance(exc, SynthOrgError):
        response = envelope(exc.code, exc.message, exc.http_status, exc.details)
        if isinstance(exc, RateLimitedError):
            response["Retry-After"] = str(exc.retry_after)
        return response
    if isinstance(exc, RequestDataTooBig):
        return envelope("payload_too_large", "the request body is too large", 413)
    if isinstance(exc, Http404):
        return envelope("not_found", "not found", 404)
    for kind, code, status in _DRF_CODES:
        if isinstance(exc, kind):
            return envelope(code, _text(exc), status)
    if isinstance(exc, exceptions.APIException):
        return envelope("invalid_argument", _text(exc), exc.status_code)
    return None


def _text(exc: Exception) -> str:
    detail = getattr(exc, "detail", None)
    if isinstance(detail, dict):
        return "; ".join(
            f"{k}: {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in detail.items()
        )
    if isinstance(detail, list):
        return "; ".join(map(str, detail))
    return str(detail if detail is not None else exc)
