"""Errors the SSRF guard raises, each carrying a stable code and an actionable reason.

The codes are the strings of ``tools_app.builtin.base.RefusalCode``; they are kept
as plain strings here so the guard has no dependency on the tool layer.
"""

from __future__ import annotations

from typing import Final

HOST_NOT_ALLOWED: Final = "HOST_NOT_ALLOWED"
INVALID_ARGUMENT: Final = "INVALID_ARGUMENT"
LIMIT_EXCEEDED: Final = "LIMIT_EXCEEDED"


class EgressError(Exception):
    """Base class: the guard refused a destination; ``code`` and ``reason`` say why."""

    code: str = HOST_NOT_ALLOWED

    def __init__(self, reason: str) -> None:
        super().__init__(f"{self.code}: {reason}")
        self.reason = reason


class EgressUrlInvalidError(EgressError):
    """The URL is malformed or ambiguous (bad scheme, control characters, bad host)."""

    code = INVALID_ARGUMENT


class EgressHostNotAllowedError(EgressError):
    """The host is denied, not allowlisted, or resolves to a blocked address."""

    code = HOST_NOT_ALLOWED


class EgressResolutionError(EgressHostNotAllowedError):
    """The host name did not resolve; nothing can be checked, so nothing is reached."""


class EgressRedirectLimitError(EgressError):
    """The server redirected more times than allowed."""

    code = LIMIT_EXCEEDED


class EgressRequestFailedError(Exception):
    """The request was allowed but the connection or exchange failed (refused, timed out)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class EgressDeadlineError(EgressRequestFailedError):
    """The exchange (connect, headers, body, redirects) ran past its wall-clock deadline."""
