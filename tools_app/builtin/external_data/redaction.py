"""PURE: response fields redacted by JSON pointer before anyone downstream sees them.

A pointer (RFC 6901, ``common.config.connections.parse_pointer``) names one field; a
``*`` token stands for every item of an array or every member of an object. A
pointer that names nothing in this response redacts nothing. The empty pointer
redacts the whole body.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from common.config.connections import WILDCARD_TOKEN, parse_pointer

REDACTED_FIELD: Final = "[REDACTED]"


def redacted(value: Any, pointers: Iterable[str]) -> tuple[Any, int]:
    """``value`` (parsed JSON) with every field the pointers name replaced; and how many
    fields were replaced. ``value`` itself is left as it was."""
    count = 0
    for pointer in pointers:
        value, hits = _replace(value, parse_pointer(pointer))
        count += hits
    return value, count


def _replace(node: Any, tokens: tuple[str, ...]) -> tuple[Any, int]:
    if not tokens:
        return REDACTED_FIELD, 1
    head, rest = tokens[0], tokens[1:]
    if isinstance(node, dict):
        keys = list(node) if head == WILDCARD_TOKEN else [head] if head in node else []
        if not keys:
            return node, 0
        copy = dict(node)
        total = 0
        for key in keys:
            copy[key], hits = _replace(node[key], rest)
            total += hits
        return copy, total
    if isinstance(node, list):
        indexes = range(len(node)) if head == WILDCARD_TOKEN else _index(head, len(node))
        if not indexes:
            return node, 0
        items = list(node)
        total = 0
        for index in indexes:
            items[index], hits = _replace(node[index], rest)
            total += hits
        return items, total
    return node, 0


def _index(token: str, length: int) -> range:
    # RFC 6901: an array index is "0" or digits without a leading zero.
    if token.isdigit() and (token == "0" or not token.startswith("0")) and int(token) < length:
        return range(int(token), int(token) + 1)
    return range(0)
