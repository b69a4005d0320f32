"""PURE: characters a person cannot see, or may take for others, found where they occur.

A card shows text exactly, and exact is not enough when a character renders as
nothing (a zero-width space, a bidi override, a tag character), as a space that is
not one, or as a line break inside what reads as one argument; or when a letter from
another script imitates a Latin one (a Cyrillic ``о`` in ``nоtes.txt``). Such
characters are flagged in place: invisible ones and line breaks shown by their
escape, look-alikes marked where they stand and named.

Look-alikes come from Unicode's confusables (the ``confusable_homoglyphs`` data):
every non-ASCII character that imitates a printable ASCII one. In a one-line value
(a path, a host, an argument, the effect line) every such character is flagged; in
running text only where it sits in a word that also holds ASCII letters or digits,
so that a paragraph written in Cyrillic is not a wall of marks.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Literal

from confusable_homoglyphs import confusables

from tools_app.sanitize.controls import is_invisible

FlagKind = Literal["line_break", "control", "invisible", "space", "lookalike"]
Mode = Literal["line", "block"]

# Characters that move or hide text though they are not controls: line and paragraph
# separators, and every format, private-use, surrogate or unassigned code point.
_HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
_ESCAPES: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x0b": "\\v", "\x0c": "\\f"}
# Plain text that needs no look at all: printable ASCII, tabs and line breaks.
_PLAIN_BLOCK: Final = re.compile(r"[\t\n\x20-\x7e]*")
_PLAIN_LINE: Final = re.compile(r"[\x20-\x7e]*")
_WORD: Final = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class CharFlag:
    """One character worth a second look: what it is and what it may pass for."""

    code: str
    name: str
    kind: FlagKind
    looks_like: str = ""

    @property
    def shown(self) -> str:
        """What stands in its place on a card: the character itself for a look-alike,
        its escape for anything that would not be seen."""
        if self.kind == "lookalike":
            return chr(int(self.code[2:], 16))
        point = int(self.code[2:], 16)
        return _ESCAPES.get(chr(point)) or (
            f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"
        )

    def describe(self) -> str:
        """``U+043E CYRILLIC SMALL LETTER O, looks like "o"``."""
        what = f"{self.code} {self.name}"
        if self.kind == "lookalike":
            return f'{what}, looks like "{self.looks_like}"'
        if self.kind == "line_break":
            return f"{what}: a line break inside the value"
        if self.kind == "space":
            return f"{what}: looks like a space but is not one"
        return f"{what}: not visible"


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of text, or one flagged character."""

    text: str
    flag: CharFlag | None = None


@functools.cache
def _lookalikes() -> dict[str, str]:
    """Each non-ASCII character that imitates a printable ASCII one, to that character
    (a letter preferred over a digit or a sign)."""
    table: dict[str, str] = {}
    for char, glyphs in confusables.confusables_data.items():
        if len(char) != 1 or char.isascii():
            continue
        targets = [
            g["c"] for g in glyphs if len(g["c"]) == 1 and g["c"].isascii() and g["c"].isprintable()
        ]
        targets = [t for t in targets if not t.isspace()]
        if targets:
            targets.sort(
                key=lambda t: (not t.isalpha(), not t.isalnum(), t.isupper() != char.isupper())
            )
            table[char] = targets[0]
    return table


def _name(char: str) -> str:
    return unicodedata.name(char, "UNNAMED CHARACTER")


def _code(char: str) -> str:
    return f"U+{ord(char):04X}"


def hidden_flag(char: str, mode: Mode) -> CharFlag | None:
    """The flag of a character that is not seen as itself (None for any other).

    In ``block`` mode line breaks and tabs are the text's own shape and not flagged.
    """
    if char == "\n":
        return None if mode == "block" else CharFlag(_code(char), "LINE FEED", "line_break")
    if char == "\t":
        return None if mode == "block" else CharFlag(_code(char), "TABULATION", "control")
    if char == "\r":
        return CharFlag(_code(char), "CARRIAGE RETURN", "line_break")
    category = unicodedata.category(char)
    if category in ("Zl", "Zp"):
        return CharFlag(_code(char), _name(char), "line_break")
    if category == "Cc":
        return CharFlag(_code(char), _name(char) if char.isprintable() else "CONTROL", "control")
    if category in _HIDDEN_CATEGORIES or is_invisible(char):
        return CharFlag(_code(char), _name(char), "invisible")
    if category == "Zs" and char != " ":
        return CharFlag(_code(char), _name(char), "space")
    return None


def _lookalike_flag(char: str) -> CharFlag | None:
    target = _lookalikes().get(char)
    if target is None:
        return None
    return CharFlag(_code(char), _name(char), "lookalike", target)


def _mixed_words(text: str) -> set[int]:
    """Positions of look-alikes inside words that also hold ASCII letters or digits."""
    table = _lookalikes()
    found: set[int] = set()
    for match in _WORD.finditer(text):
        word = match.group()
        if word.isascii() or not any(c.isascii() and c.isalnum() for c in word):
            continue
        found.update(match.start() + i for i, c in enumerate(word) if c in table)
    return found


def _flags(text: str, mode: Mode) -> Iterator[tuple[int, CharFlag]]:
    plain = _PLAIN_BLOCK if mode == "block" else _PLAIN_LINE
    if plain.fullmatch(text):
        return
    marked = _mixed_words(text) if mode == "block" else None
    for index, char in enumerate(text):
        if char.isascii() and char.isprintable():
            continue
        flag = hidden_flag(char, mode)
        if flag is None and (marked is None or index in marked):
            flag = _lookalike_flag(char)
        if flag is not None:
            yield index, flag


def segments(text: str, mode: Mode = "line") -> tuple[Segment, ...]:
    """``text`` as plain runs and flagged characters, in order."""
    parts: list[Segment] = []
    copied = 0
    for index, flag in _flags(text, mode):
        if index > copied:
            parts.append(Segment(text[copied:index]))
        parts.append(Segment(text[index], flag))
        copied = index + 1
    if copied < len(text) or not parts:
        parts.append(Segment(text[copied:]))
    return tuple(parts)


def char_flags(text: str, mode: Mode = "line") -> tuple[CharFlag, ...]:
    """The distinct flagged characters of ``text``, in order of first appearance."""
    return tuple(dict.fromkeys(flag for _, flag in _flags(text, mode)))


def escaped(text: str) -> str:
    """``text`` on one line as plain text: what would not be seen written as its escape
    (a backslash written twice when anything is escaped, so nothing reads ambiguously)."""
    parts = segments(text, "line")
    if not any(part.flag is not None and part.flag.kind != "lookalike" for part in parts):
        return text
    return "".join(
        part.flag.shown if part.flag is not None else part.text.replace("\\", "\\\\")
        for part in parts
    )
