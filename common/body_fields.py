"""Request-body fields that take JSON as typed.

DRF's fields coerce: ``CharField`` turns ``12`` into ``"12"`` and ``IntegerField``
turns ``"12"`` into ``12``. A JSON body whose value has the wrong type is refused
instead, as the published schema says, so what a client sends is what it meant.
Query parameters are text by nature and keep DRF's own fields.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


def _allowed_text(min_length: int | None, max_length: int | None) -> str:
    if max_length is not None:
        return f"not a string; a string of {min_length or 0} to {max_length} characters"
    if min_length:
        return f"not a string; a string of at least {min_length} characters"
    return "not a string; a JSON string"


class _JsonStringOnly:
    """Refuses a value that is not a JSON string before the field's own checks."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_text")  # type: ignore[attr-defined]
        return str(super().to_internal_value(data))  # type: ignore[misc]


class StrictTextField(_JsonStringOnly, serializers.CharField):
    """A CharField that takes only a JSON string; its refusal says the lengths allowed."""

    default_error_messages = {"not_text": "not a string"}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if "not_text" not in kwargs.get("error_messages", {}):
            self.error_messages["not_text"] = _allowed_text(self.min_length, self.max_length)


class StrictRegexField(_JsonStringOnly, serializers.RegexField):
    """A RegexField that takes only a JSON string (a number of 64 digits is not a digest)."""

    default_error_messages = {"not_text": "not a string; a JSON string matching the pattern"}


class StrictIntegerField(serializers.IntegerField):
    """An IntegerField that takes only a JSON number with no fraction (not a string, not a
    boolean)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        if isinstance(data, float) and not data.is_integer():
            self.fail("invalid")
        return int(super().to_internal_value(data))
