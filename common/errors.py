"""Typed errors that services raise and the API turns into the error envelope."""

from __future__ import annotations

from typing import Any


class SynthOrgError(Exception):
    """A refusal with a stable code and a message a person or an agent can act on."""

    code = "invalid_argument"
    http_status = 400

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class InvalidArgumentError(SynthOrgError):
    code, http_status = "invalid_argument", 400


class UnauthenticatedError(SynthOrgError):
    code, http_status = "unauthenticated", 401


class ForbiddenError(SynthOrgError):
    code, http_status = "forbidden", 403


class NotFoundError(SynthOrgError):
    code, http_status = "not_found", 404


class ConflictError(SynthOrgError):
    code, http_status = "conflict", 409


class PayloadTooLargeError(SynthOrgError):
    code, http_status = "payload_too_large", 413


class RateLimitedError(SynthOrgError):
    code, http_status = "rate_limited", 429

    def __init__(self, message: str, *, retry_after: int, details: dict[str, Any] | None = None):
        super().__init__(message, details=details)
        self.retry_after = retry_after


class InternalError(SynthOrgError):
    code, http_status = "internal", 500


class UnavailableError(SynthOrgError):
    code, http_status = "unavailable", 503
