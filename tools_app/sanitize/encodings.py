"""Every spelling of a known secret worth looking for in tool output.

A secret can come back as itself, escaped inside a JSON string, percent-encoded
in a URL, as hex, or base64 / base64url encoded somewhere inside a longer
encoded blob. Base64 turns three bytes into four characters, so the characters
standing for the secret depend on where in the blob it starts: one spelling per
alignment (0, 1 or 2 bytes before it), each keeping only the characters made
of the secret's bits alone. The characters at either end that mix the secret's
bits with its neighbours' are not part of the spelling; `slack` says how many
of them to take away with a match.

Spellings are compared with output from which whitespace has been removed, so
they hold no whitespace either.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote

BASE64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
BASE64URL_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_NO_ALPHABET: frozenset[str] = frozenset()
# One character at each end mixes the secret's bits with its neighbours'; after
# it may come up to two `=` of padding.
_BASE64_SLACK = 3
_PERCENT_ESCAPE = re.compile(r"%[0-9A-F]{2}")


@dataclass(frozen=True)
class Spelling:
    """One way a secret can appear, and the neighbours a match also takes."""

    text: str
    # Characters of this alphabet next to a match (and `=` padding after it), up
    # to `slack` on each side, carry bits of the secret too and go with it.
    alphabet: frozenset[str] = _NO_ALPHABET
    slack: int = 0


def squeeze(text: str) -> str:
    """`text` without any whitespace (line breaks included)."""
    return "".join(text.split())


def _base64_core(data: bytes, offset: int, *, urlsafe: bool) -> str:
    """The characters of `data` base64-encoded after `offset` other bytes that
    depend on `data` alone."""
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    encoded = encode(b"\0" * offset + data).decode("ascii").rstrip("=")
    first_bit, end_bit = 8 * offset, 8 * (offset + len(data))
    # Character i stands for bits [6i, 6i + 6); keep those wholly inside the secret.
    first = -(-first_bit // 6)
    end = end_bit // 6
    return encoded[first:end]


def secret_spellings(secret: str) -> Iterator[Spelling]:
    """Each spelling of `secret` (already stripped of invisible characters)."""
    plain = squeeze(secret)
    yield Spelling(plain)
    yield Spelling(squeeze(json.dumps(secret)[1:-1]))
    percent = quote(plain, safe="")
    yield Spelling(percent)
    yield Spelling(_PERCENT_ESCAPE.sub(lambda escape: escape.group().lower(), percent))
    data = plain.encode("utf-8")
    yield Spelling(data.hex())
    yield Spelling(data.hex().upper())
    for offset in range(3):
        yield Spelling(_base64_core(data, offset, urlsafe=False), BASE64_ALPHABET, _BASE64_SLACK)
        yield Spelling(_base64_core(data, offset, urlsafe=True), BASE64URL_ALPHABET, _BASE64_SLACK)
