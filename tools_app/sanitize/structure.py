"""Redact secrets in JSON-like data: arguments stored for people and auditors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tools_app.sanitize.assignments import SECRET_VALUE
from tools_app.sanitize.credentials import marker
from tools_app.sanitize.keys import is_secret_name
from tools_app.sanitize.redaction import known_secret_forms, redact_counted


def redact_structure(value: Any, known_secrets: Iterable[str] = ()) -> Any:
    """A copy of `value` with secrets redacted, its shape kept.

    Strings anywhere are redacted like text; every string or number under a
    key that names a secret (`password`, `apiKey`, `Authorization`, …), however
    deep, is replaced whole. Booleans and nulls stay: they reveal nothing and
    say whether a secret was given. Tuples come back as lists, as JSON would.
    """
    forms = known_secret_forms(known_secrets)
    root: list[Any] = [None]
    # An explicit stack instead of recursion: deeply nested input must not
    # turn into a RecursionError in the middle of an audited write.
    stack: list[tuple[Any, bool, Any, Any]] = [(value, False, root, 0)]
    while stack:
        item, secret, parent, slot = stack.pop()
        if isinstance(item, Mapping):
            mapping: dict[Any, Any] = {}
            parent[slot] = mapping
            for key, child in item.items():
                named_secret = isinstance(key, str) and is_secret_name(key)
                clean_key = redact_counted(key, forms)[0] if isinstance(key, str) else key
                mapping[clean_key] = None
                stack.append((child, secret or named_secret, mapping, clean_key))
        elif isinstance(item, list | tuple):
            sequence: list[Any] = [None] * len(item)
            parent[slot] = sequence
            stack.extend((child, secret, sequence, index) for index, child in enumerate(item))
        else:
            parent[slot] = _redact_leaf(item, secret=secret, forms=forms)
    return root[0]


def _redact_leaf(item: Any, *, secret: bool, forms: tuple[str, ...]) -> Any:
    if item is None or isinstance(item, bool):
        return item
    if secret:
        return item if item == "" else marker(SECRET_VALUE)
    if isinstance(item, str):
        return redact_counted(item, forms)[0]
    return item
