"""Typed exceptions, one per error code of the agent API."""

from __future__ import annotations

import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import httpx


class SynthOrgError(Exception):
    """An error answer from the console: `{"error": {"code", "message", "details"}}`."""

    default_code = "unknown"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: Mapping[str, Any] | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code or self.default_code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.status = status

    def __str__(self) -> str:
        where = f" (HTTP {self.status})" if self.status else ""
        return f"{self.code}{where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        """The error envelope, as the console sends it."""
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class InvalidArgument(SynthOrgError):
    """400: the request or the tool arguments are not valid."""

    default_code = "invalid_argument"


class Unauthenticated(SynthOrgError):
    """401: no token, or an unknown or revoked one."""

    default_code = "unauthenticated"


class Forbidden(SynthOrgError):
    """403: the token may not use this endpoint."""

    default_code = "forbidden"


class NotFound(SynthOrgError):
    """404: unknown, not permitted, or another agent's."""

    default_code = "not_found"


class Conflict(SynthOrgError):
    """409: e.g. an idempotency key reused for a different call."""

    default_code = "conflict"


class PayloadTooLarge(SynthOrgError):
    """413: the request body is over the console's limit."""

    default_code = "payload_too_large"


class RateLimited(SynthOrgError):
    """429: too many calls; `retry_after` says how many seconds to wait, when known."""

    default_code = "rate_limited"

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class Unavailable(SynthOrgError):
    """503, or the console could not be reached at all (`status` is None then)."""

    default_code = "unavailable"


ERRORS_BY_CODE: Mapping[str, type[SynthOrgError]] = {
    cls.default_code: cls
    for cls in (
        InvalidArgument,
        Unauthenticated,
        Forbidden,
        NotFound,
        Conflict,
        PayloadTooLarge,
        RateLimited,
        Unavailable,
    )
}
ERRORS_BY_STATUS: Mapping[int, type[SynthOrgError]] = {
    400: InvalidArgument,
    401: Unauthenticated,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    429: RateLimited,
    502: Unavailable,
    503: Unavailable,
    504: Unavailable,
}


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta-seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def error_from_response(response: httpx.Response) -> SynthOrgError:
    """The typed exception for an error answer, envelope or not."""
    code: str | None = None
    message = response.reason_phrase or f"HTTP {response.status_code}"
    details: Mapping[str, Any] = {}
    try:
        body = response.json()
    except ValueError:
        body = None
    envelope = body.get("error") if isinstance(body, dict) else None
    if isinstance(envelope, dict):
        code = str(envelope.get("code") or "") or None
        message = str(envelope.get("message") or message)
        found = envelope.get("details")
        details = found if isinstance(found, dict) else {}
    cls = ERRORS_BY_CODE.get(code or "") or ERRORS_BY_STATUS.get(response.status_code)
    cls = cls or SynthOrgError
    kwargs: dict[str, Any] = {"code": code, "details": details, "status": response.status_code}
    if cls is RateLimited:
        kwargs["retry_after"] = parse_retry_after(response.headers.get("Retry-After"))
    return cls(message, **kwargs)
