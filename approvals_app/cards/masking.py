"""PURE: secret-looking values masked before anything reaches a card.

The stored arguments are already redacted (tools_app.sanitize); the card masks
once more, more eagerly, because a person's screen is shared and screenshotted:
every value under a secret-sounding key or header name, and every value that
looks like a credential whatever its name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from tools_app.sanitize.keys import is_secret_name
from tools_app.sanitize.redaction import redact_secrets

MASK: Final = "•••••• (masked)"
# Headers that carry credentials though their names hold no secret word.
SECRET_HEADERS: Final = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-amz-security-token"}
)
_REDACTION_MARK: Final = "[REDACTED"
# A run of at least this many letters and digits mixing cases and digits reads as a token.
_TOKEN_MIN: Final = 20
_SEGMENT: Final = re.compile(rf"[A-Za-z0-9_\-+/=.]{{{_TOKEN_MIN},}}")


def _token_shaped(segment: str) -> bool:
    letters = sum(c.isalpha() for c in segment)
    digits = sum(c.isdigit() for c in segment)
    mixed_case = any(c.islower() for c in segment) and any(c.isupper() for c in segment)
    return digits >= 2 and letters >= 4 and (mixed_case or digits >= 6) and "/" not in segment[:1]


def looks_secret(value: str) -> bool:
    """True for a value shaped like a credential (or already redacted)."""
    if _REDACTION_MARK in value:
        return True
    if redact_secrets(value) != value:
        return True
    return any(_token_shaped(match.group(0)) for match in _SEGMENT.finditer(value))


def secret_name(name: str) -> bool:
    """True for a key or header name whose value is a secret."""
    return name.lower() in SECRET_HEADERS or is_secret_name(name)


def mask_header(name: str, value: Any) -> tuple[str, bool]:
    """The header value as shown, and whether it was masked."""
    text = value if isinstance(value, str) else str(value)
    if text == MASK or secret_name(name) or looks_secret(text):
        return MASK, True
    return text, False


def mask_arguments(value: Any, *, under_headers: bool = False) -> Any:
    """A copy of ``value`` with secret-named and secret-looking header values masked.

    Every value under a secret-sounding key is masked, at any depth; inside a
    ``headers`` mapping, any value that looks like a token is masked too.
    """
    if isinstance(value, Mapping):
        result: dict[str, Any] = {}
        for key, item in value.items():
            name = str(key)
            scalar = isinstance(item, (str, int, float)) and not isinstance(item, bool)
            if scalar and (secret_name(name) or (under_headers and looks_secret(str(item)))):
                result[name] = MASK
                continue
            result[name] = mask_arguments(item, under_headers=name.lower() == "headers")
        return result
    if isinstance(value, list):
        return [mask_arguments(item) for item in value]
    return value
