"""PURE: the error envelope of API.md and which paths speak it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

API_PREFIXES = ("/api/", "/mcp/")
API_EXACT = frozenset({"/api", "/mcp"})

CODE_FOR_STATUS: dict[int, str] = {
    400: "invalid_argument",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    500: "internal",
    503: "unavailable",
}

DEFAULT_MESSAGE: dict[str, str] = {
    "invalid_argument": "the request is not valid",
    "unauthenticated": "send Authorization: Bearer <token>",
    "forbidden": "you may not do this",
    "not_found": "no such resource",
    "method_not_allowed": "this method is not allowed here",
    "conflict": "the request conflicts with the current state",
    "payload_too_large": "the request body is too large",
    "unsupported_media_type": "send the body as application/json",
    "rate_limited": "too many requests",
    "internal": "the console failed to answer; the error is logged with this request's id",
    "unavailable": "the console cannot answer right now; retry later",
}


def is_api_path(path: str) -> bool:
    """Paths whose every answer is JSON (API.md: "never an HTML page")."""
    return path.startswith(API_PREFIXES) or path in API_EXACT


def code_for_status(status: int) -> str:
    """The envelope code of an HTTP status; other 4xx read as invalid_argument, 5xx as internal."""
    if status in CODE_FOR_STATUS:
        return CODE_FOR_STATUS[status]
    return "internal" if status >= 500 else "invalid_argument"


def error_document(
    code: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def error_bytes(code: str, message: str, details: dict[str, Any] | None = None) -> bytes:
    return json.dumps(error_document(code, message, details)).encode()


# A view that answers a refusal in the envelope leaves a note on its response under this
# attribute; the edge middleware audits it.
REFUSAL_MARK = "_synthorg_refusal"


@dataclass(frozen=True)
class RefusalNote:
    """A refusal a view answered in the envelope, left on its response to be audited."""

    status: int
    code: str
    message: str
    agent: Any | None = None
    person: Any | None = None
