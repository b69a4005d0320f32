"""A JSON body parser that refuses what the console could never judge or store.

Refused, each with the place in the body and what is allowed:
- text that is not JSON, or not UTF-8;
- numbers that are not finite: ``NaN``, ``Infinity`` and literals too large for a
  double (``1e309`` reads as infinity), which no canonical hash can spell;
- nesting deeper than ``SYNTHORG_JSON_MAX_DEPTH`` (deep nesting would exhaust the
  parser's stack long before it meant anything);
- NUL characters and lone surrogates (legal in JSON text, but PostgreSQL cannot
  store them).
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.conf import settings
from rest_framework.parsers import JSONParser

from common.errors import InvalidArgumentError

FINITE_RANGE = (
    "numbers must be finite (between -1.8e308 and 1.8e308); NaN and Infinity are not JSON"
)


class _NonFinite:
    """A number literal that does not fit a double, kept as written for the message."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _number(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def max_depth() -> int:
    return int(settings.SYNTHORG_JSON_MAX_DEPTH)


def json_loads(raw: bytes | str) -> Any:
    """Parse JSON text and check it; raise InvalidArgumentError naming the first problem."""
    limit = max_depth()
    try:
        data = json.loads(raw, parse_float=_number, parse_constant=_NonFinite)
    except RecursionError:
        raise InvalidArgumentError(
            f"body: nested deeper than {limit} levels; at most {limit} levels are allowed",
            details={"field": "body", "max_depth": limit},
        ) from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError alike
        raise InvalidArgumentError(
            f"body: not valid JSON ({exc}); send a UTF-8 JSON document",
            details={"field": "body"},
        ) from None
    problem = refusal_at(data, limit)
    if problem is not None:
        where, message, extra = problem
        raise InvalidArgumentError(f"{where}: {message}", details={"field": where, **extra})
    return data


def refusal_at(
    value: Any, limit: int, path: str = "body", depth: int = 0
) -> tuple[str, str, dict[str, Any]] | None:
    """The first place in parsed JSON the console refuses: (path, why, details), or None."""
    if depth > limit:
        return (
            path,
            f"nested deeper than {limit} levels; at most {limit} levels are allowed",
            {"max_depth": limit},
        )
    if isinstance(value, _NonFinite):
        return path, f"{value.text} is not a finite number; {FINITE_RANGE}", {}
    if isinstance(value, str):
        if "\x00" in value:
            return path, "NUL characters are not allowed in text", {}
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path, "lone surrogates (\\ud800-\\udfff) are not allowed in text", {}
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = refusal_at(key, limit, _child(path, "<key>"), depth + 1) or refusal_at(
                item, limit, _child(path, str(key)), depth + 1
            )
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = refusal_at(item, limit, f"{path}[{index}]", depth + 1)
            if found:
                return found
    return None


def _child(path: str, key: str) -> str:
    # Top-level fields are named as the API documents them ("arguments.path").
    return key if path == "body" else f"{path}.{key}"


def unstorable_at(value: Any, path: str = "body") -> str | None:
    """The first place in parsed JSON the console refuses, or None."""
    found = refusal_at(value, max_depth(), path)
    return found[0] if found else None


class StrictJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        raw = stream.read() if stream is not None else b""
        return json_loads(raw)
