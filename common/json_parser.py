"""A JSON body parser that refuses what the database could never store.

NUL characters and lone surrogates (both legal in JSON text) cannot be written to
PostgreSQL; refusing them when the body is parsed gives the caller a 400 naming the
place, instead of a failure deep in a transaction.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_DEPTH = 32


def unstorable_at(value: Any, path: str = "body", depth: int = 0) -> str | None:
    """The first place in parsed JSON holding a NUL or a lone surrogate, or None."""
    if depth > MAX_DEPTH:
        return f"{path} (nested deeper than {MAX_DEPTH} levels)"
    if isinstance(value, str):
        if "\x00" in value:
            return path
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = unstorable_at(key, f"{path}.<key>", depth + 1) or unstorable_at(
                item, f"{path}.{key}", depth + 1
            )
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = unstorable_at(item, f"{path}[{index}]", depth + 1)
            if found:
                return found
    return None


class StrictJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        where = unstorable_at(data)
        if where:
            raise ParseError(
                f"{where}: NUL characters, lone surrogates and nesting deeper than {MAX_DEPTH} "
                "levels are not allowed"
            )
        return data
