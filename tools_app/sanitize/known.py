"""The console's own secrets, found in any spelling by one automaton.

Every spelling of every secret (see `encodings`) is computed once and put in a
single Aho-Corasick automaton, so a result costs one pass whatever the number
of secrets. Output is searched with its whitespace removed: a secret broken
over two lines, wrapped base64 or space-separated hex is still one run. Only
when something is found are the positions mapped back to the output, and the
whole span (the whitespace inside it included) replaced by one marker.

Text between existing markers is searched piece by piece, so a marker is never
part of a match and redacting twice gives what redacting once gave.
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections import Counter
from collections.abc import Iterable

import ahocorasick_rs

from tools_app.sanitize.controls import strip_invisible
from tools_app.sanitize.credentials import MARKER, marker
from tools_app.sanitize.encodings import Spelling, secret_spellings

KNOWN_SECRET = "known_secret"
# Default for the shortest secret (and spelling) looked for: shorter strings
# would match ordinary words and numbers. The console passes its setting.
MIN_KNOWN_SECRET_LENGTH = 8
# Output is squeezed in blocks of this many characters (see `_SqueezedText`).
_BLOCK = 1024
_PADDING = "="


class KnownSecrets:
    """A set of secrets, ready to be found in output."""

    def __init__(self, secrets: Iterable[str], *, min_length: int = MIN_KNOWN_SECRET_LENGTH):
        spellings: dict[str, Spelling] = {}
        for secret in secrets:
            if not isinstance(secret, str):
                continue
            # Output is stripped before it is searched, but not every caller strips.
            for form in dict.fromkeys((strip_invisible(secret)[0], secret)):
                if len("".join(form.split())) < min_length:
                    continue
                for spelling in secret_spellings(form):
                    if len(spelling.text) >= min_length:
                        # The plain spelling wins over an encoded one that equals it.
                        spellings.setdefault(spelling.text, spelling)
        self.spellings: tuple[Spelling, ...] = tuple(spellings.values())
        self._automaton = (
            ahocorasick_rs.AhoCorasick(
                [spelling.text for spelling in self.spellings],
                matchkind=ahocorasick_rs.MatchKind.LeftmostLongest,
            )
            if self.spellings
            else None
        )

    def __bool__(self) -> bool:
        return self._automaton is not None

    def redact(self, text: str, counts: Counter[str]) -> str:
        """`text` with every spelling of every secret replaced by a marker, counted."""
        if self._automaton is None:
            return text
        if "[" not in text or MARKER.search(text) is None:
            return self._redact_piece(text, counts)
        pieces: list[str] = []
        copied = 0
        for found in MARKER.finditer(text):
            pieces += (self._redact_piece(text[copied : found.start()], counts), found.group())
            copied = found.end()
        pieces.append(self._redact_piece(text[copied:], counts))
        return "".join(pieces)

    def _redact_piece(self, text: str, counts: Counter[str]) -> str:
        assert self._automaton is not None
        squeezed = _SqueezedText(text)
        matches = self._automaton.find_matches_as_indexes(squeezed.squeezed)
        if not matches:
            return text
        to_original = squeezed.original if len(squeezed.squeezed) != len(text) else None
        pieces: list[str] = []
        copied = 0
        replacement = marker(KNOWN_SECRET)
        for index, start, end in matches:
            if to_original is not None:
                start, end = to_original(start), to_original(end - 1) + 1
            # A match widened to the right may have taken the start of this one.
            start = max(start, copied)
            start, end = _widen(text, self.spellings[index], start, end, floor=copied)
            end = max(end, start)
            pieces += (text[copied:start], replacement)
            copied = end
            counts[KNOWN_SECRET] += 1
        pieces.append(text[copied:])
        return "".join(pieces)


def _widen(text: str, spelling: Spelling, start: int, end: int, *, floor: int) -> tuple[int, int]:
    """Take in the neighbours that also carry the secret's bits (base64 alignment)."""
    for _ in range(spelling.slack):
        if start > floor and text[start - 1] in spelling.alphabet:
            start -= 1
    for _ in range(spelling.slack):
        if end < len(text) and (text[end] in spelling.alphabet or text[end] == _PADDING):
            end += 1
    return start, end


class _SqueezedText:
    """`text` without whitespace, and the way back to positions in `text`.

    Squeezed block by block, so mapping a position back walks one block of the
    original in Python, not the whole output.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        blocks = ["".join(text[i : i + _BLOCK].split()) for i in range(0, len(text), _BLOCK)]
        self.squeezed = "".join(blocks)
        self._starts = list(itertools.accumulate((len(b) for b in blocks[:-1]), initial=0))

    def original(self, position: int) -> int:
        """The position in `text` of the character at `position` of `squeezed`."""
        block = bisect.bisect_right(self._starts, position) - 1
        wanted = position - self._starts[block]
        for offset, char in enumerate(self.text[block * _BLOCK : (block + 1) * _BLOCK]):
            if not char.isspace():
                if wanted == 0:
                    return block * _BLOCK + offset
                wanted -= 1
        raise ValueError(f"position {position} is past the squeezed text")


@functools.lru_cache(maxsize=16)
def known_secrets_for(secrets: tuple[str, ...], min_length: int) -> KnownSecrets:
    """The automaton for these secrets, built once per set."""
    return KnownSecrets(secrets, min_length=min_length)
