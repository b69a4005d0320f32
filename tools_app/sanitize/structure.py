"""Sanitise JSON-like data: structured results an agent sees, arguments auditors see.

A structured result is sanitised like text, string by string, keys included,
and keeps its shape: numbers, booleans and nulls are never replaced (a
redaction never turns a non-string into a string), so a result valid against
its tool's output schema stays valid.

Two keys that differ only by what sanitising removes (`"a\u200bb"` and `"ab"`)
would collide: the key that was already clean keeps its name, and each other
one gets ` (2)`, ` (3)` … appended, so no value is lost or overwritten.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tools_app.sanitize.assignments import SECRET_VALUE
from tools_app.sanitize.controls import strip_invisible
from tools_app.sanitize.credentials import marker
from tools_app.sanitize.keys import is_secret_name, not_a_secret
from tools_app.sanitize.known import MIN_KNOWN_SECRET_LENGTH, KnownSecrets, known_secrets_for
from tools_app.sanitize.output import RedactionCount, redaction_counts
from tools_app.sanitize.redaction import redact_counted


@dataclass(frozen=True)
class SanitizedStructure:
    """A sanitised copy of structured data, and what sanitising did to it."""

    value: Any
    redactions: tuple[RedactionCount, ...]
    stripped_chars: int
    # Keys that collided with another once sanitised and were given a suffix.
    renamed_keys: int


class _StringCleaner:
    """Strips and redacts strings, each distinct string once."""

    def __init__(self, known: KnownSecrets, *, shapes: bool) -> None:
        self.known = known
        self.shapes = shapes
        self.counts: Counter[str] = Counter()
        self.stripped = 0
        self._seen: dict[str, tuple[str, Counter[str], int]] = {}

    def visible(self, text: str) -> str:
        # Printable ASCII holds no escape, control or invisible character.
        if text.isascii() and text.isprintable():
            return text
        return strip_invisible(text)[0]

    def clean(self, text: str) -> str:
        seen = self._seen.get(text)
        if seen is None:
            stripped, removed = (
                (text, 0) if text.isascii() and text.isprintable() else strip_invisible(text)
            )
            redacted, counts = redact_counted(stripped, self.known, shapes=self.shapes)
            seen = self._seen[text] = (redacted, counts, removed)
        self.counts.update(seen[1])
        self.stripped += seen[2]
        return seen[0]

    def secret(self, item: Any) -> Any:
        """A value under a secret-named key: a string goes whole, anything else stays."""
        if not isinstance(item, str):
            return item
        visible = self.visible(item)
        if visible == "" or not_a_secret(visible):
            return self.clean(item)
        self.counts[SECRET_VALUE] += 1
        return marker(SECRET_VALUE)


def _unique_keys(keys: list[str], cleaned: list[str]) -> tuple[list[str], int]:
    """`cleaned`, with a suffix on each key that collides with a key kept as it was."""
    taken = {clean for key, clean in zip(keys, cleaned, strict=True) if key == clean}
    names: list[str] = []
    renamed = 0
    for key, clean in zip(keys, cleaned, strict=True):
        if key == clean:
            names.append(clean)
            continue
        name, number = clean, 1
        while name in taken:
            number += 1
            name = f"{clean} ({number})"
        renamed += name != clean
        taken.add(name)
        names.append(name)
    return names, renamed


def sanitize_structure(
    value: Any,
    *,
    known_secrets: Iterable[str] = (),
    min_secret_length: int = MIN_KNOWN_SECRET_LENGTH,
    shapes: bool = True,
) -> SanitizedStructure:
    """A copy of `value` with every string, key and value, stripped and redacted.

    A string under a key that names a secret (`password`, `apiKey`, …), however
    deep, is replaced whole unless it is empty, a path or a short number.
    Tuples come back as lists, as JSON would. `shapes=False` redacts known
    secrets only, and no value for its key's name.
    """
    known = known_secrets_for(tuple(known_secrets), min_secret_length)
    cleaner = _StringCleaner(known, shapes=shapes)
    renamed = 0
    root: list[Any] = [None]
    # An explicit stack instead of recursion: deeply nested output must not
    # turn into a RecursionError in the worker.
    stack: list[tuple[Any, bool, Any, Any]] = [(value, False, root, 0)]
    while stack:
        item, secret, parent, slot = stack.pop()
        if isinstance(item, Mapping):
            keys = [key for key in item if isinstance(key, str)]
            names, collided = _unique_keys(keys, [cleaner.clean(key) for key in keys])
            renamed += collided
            clean_name = dict(zip(keys, names, strict=True))
            mapping: dict[Any, Any] = {}
            parent[slot] = mapping
            for key, child in item.items():
                name = clean_name.get(key, key) if isinstance(key, str) else key
                mapping[name] = None
                named_secret = (
                    shapes and isinstance(key, str) and is_secret_name(cleaner.visible(key))
                )
                stack.append((child, secret or named_secret, mapping, name))
        elif isinstance(item, list | tuple):
            sequence: list[Any] = [None] * len(item)
            parent[slot] = sequence
            stack.extend((child, secret, sequence, index) for index, child in enumerate(item))
        elif secret:
            parent[slot] = cleaner.secret(item)
        elif isinstance(item, str):
            parent[slot] = cleaner.clean(item)
        else:
            parent[slot] = item
    return SanitizedStructure(
        value=root[0],
        redactions=redaction_counts(cleaner.counts),
        stripped_chars=cleaner.stripped,
        renamed_keys=renamed,
    )


def redact_structure(
    value: Any,
    known_secrets: Iterable[str] = (),
    *,
    min_secret_length: int = MIN_KNOWN_SECRET_LENGTH,
) -> Any:
    """A copy of `value` with secrets redacted, its shape kept: arguments as
    people and auditors see them.

    Strings anywhere are redacted like text; every string or number under a
    key that names a secret (`password`, `apiKey`, `Authorization`, …), however
    deep, is replaced whole. Booleans and nulls stay: they reveal nothing and
    say whether a secret was given. Tuples come back as lists, as JSON would.
    """
    known = known_secrets_for(tuple(known_secrets), min_secret_length)
    root: list[Any] = [None]
    stack: list[tuple[Any, bool, Any, Any]] = [(value, False, root, 0)]
    while stack:
        item, secret, parent, slot = stack.pop()
        if isinstance(item, Mapping):
            mapping: dict[Any, Any] = {}
            parent[slot] = mapping
            for key, child in item.items():
                named_secret = isinstance(key, str) and is_secret_name(key)
                clean_key = redact_counted(key, known)[0] if isinstance(key, str) else key
                mapping[clean_key] = None
                stack.append((child, secret or named_secret, mapping, clean_key))
        elif isinstance(item, list | tuple):
            sequence: list[Any] = [None] * len(item)
            parent[slot] = sequence
            stack.extend((child, secret, sequence, index) for index, child in enumerate(item))
        else:
            parent[slot] = _redact_argument(item, secret=secret, known=known)
    return root[0]


def _redact_argument(item: Any, *, secret: bool, known: KnownSecrets) -> Any:
    if item is None or isinstance(item, bool):
        return item
    if secret:
        return item if item == "" else marker(SECRET_VALUE)
    if isinstance(item, str):
        return redact_counted(item, known)[0]
    return item
