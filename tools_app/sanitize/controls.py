"""Strip what a terminal or a text renderer would act on but a reader cannot see.

Terminal escape sequences can rewrite what was printed, set the clipboard
(OSC 52) or hide a link target (OSC 8); bidi controls reorder text so that
what is shown differs from what is read; tag, zero-width and other format
characters carry text no person sees. An agent reading tool output must get
exactly what a person would see, so all of these go.

Every pattern here is linear: string sequences stop at their terminator and
scan with possessive quantifiers, so a megabyte of hostile input costs one pass.
"""

from __future__ import annotations

import re

_INTRODUCERS = "\x1b\x90\x98\x9b\x9d\x9e\x9f"
# String sequences: OSC (ESC ] / 0x9d), DCS (ESC P / 0x90), SOS (ESC X / 0x98),
# PM (ESC ^ / 0x9e), APC (ESC _ / 0x9f). They end at ST (ESC \ or 0x9c) or BEL;
# an unterminated one loses only its introducer, its body is left as plain text.
_STRING_SEQUENCE = r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*+(?:\x07|\x1b\\|\x9c)"
# CSI: parameters 0x30-0x3f, intermediates 0x20-0x2f, one final byte 0x40-0x7e.
_CSI = r"(?:\x1b\[|\x9b)[\x30-\x3f]*+[\x20-\x2f]*+[\x40-\x7e]"
# Any other escape: intermediates then a final byte (ESC c, ESC 7, ESC ( B …).
_SINGLE_ESCAPE = r"\x1b[\x20-\x2f]*+[\x30-\x7e]"
ESCAPE_SEQUENCE = re.compile(f"{_STRING_SEQUENCE}|{_CSI}|{_SINGLE_ESCAPE}")

# Code points removed one by one once the sequences are gone. Ranges, inclusive.
_INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00, 0x08),  # C0 controls except \t and \n
    (0x0B, 0x0D),  # a carriage return left after \r\n became \n would overwrite a line
    (0x0E, 0x1F),  # includes a stray ESC left by a malformed sequence
    (0x7F, 0x9F),  # DEL and the C1 controls
    (0xAD, 0xAD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x0600, 0x0605),  # Arabic prepended format marks
    (0x061C, 0x061C),  # Arabic letter mark (bidi)
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),  # Hangul fillers: render as nothing
    (0x17B4, 0x17B5),  # Khmer inherent vowels, invisible
    (0x180B, 0x180F),  # Mongolian variation selectors and vowel separator
    (0x200B, 0x200F),  # zero-width space / non-joiner / joiner, LRM, RLM
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, deprecated format
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors: can smuggle bytes after any character
    (0xFEFF, 0xFEFF),  # zero-width no-break space / BOM
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF9, 0xFFFB),  # interlinear annotation
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),  # Egyptian hieroglyph format controls
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol format controls
    (0xE0000, 0xE007F),  # tag characters: invisible ASCII
    (0xE0100, 0xE01EF),  # variation selectors supplement
)


def _char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    parts = []
    for low, high in ranges:
        first, last = re.escape(chr(low)), re.escape(chr(high))
        parts.append(first if low == high else f"{first}-{last}")
    return "[" + "".join(parts) + "]"


INVISIBLE = re.compile(_char_class(_INVISIBLE_RANGES) + "+")
# A carriage return ends a line only when a newline follows; alone it moves the
# cursor back to overwrite what was printed, so it is dropped with the rest.
_CRLF = re.compile(r"\r+\n")
# Line and paragraph separators break lines in some renderers and not in others.
_LINE_SEPARATORS = str.maketrans({"\u2028": "\n", "\u2029": "\n"})


def is_invisible(char: str) -> bool:
    """True when `char` is one of the code points `strip_invisible` removes."""
    point = ord(char)
    return any(low <= point <= high for low, high in _INVISIBLE_RANGES)


def strip_invisible(text: str) -> tuple[str, int]:
    """Remove escape sequences and invisible characters; answer the text and how many went."""
    before = len(text)
    # Plain text skips the sequence pass: only these code points start one.
    if any(introducer in text for introducer in _INTRODUCERS):
        text = ESCAPE_SEQUENCE.sub("", text)
    text = _CRLF.sub("\n", text)
    text = text.translate(_LINE_SEPARATORS)
    text = INVISIBLE.sub("", text)
    return text, before - len(text)
