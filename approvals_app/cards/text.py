"""PURE: sizes, folding, argument order, pretty JSON and diffs for approval cards."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from approvals_app.cards.model import Block, BlockKind, CardLimits, DiffLine

_UNITS: Final = ("B", "KB", "MB", "GB")
_DIFF_CONTEXT: Final = 3


def size_label(text: str) -> str:
    """``10.4 KB · 173 lines`` for a person deciding whether to open it."""
    size = len(text.encode("utf-8", "surrogatepass"))
    lines = text.count("\n") + (0 if not text or text.endswith("\n") else 1)
    return f"{byte_label(size)} · {lines:,} line{'' if lines == 1 else 's'}"


def byte_label(size: int) -> str:
    """A byte count in the largest unit that keeps it at least 1."""
    value = float(size)
    for unit in _UNITS:
        if value < 1024 or unit == _UNITS[-1]:
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover - the loop always returns


def char_count(count: int) -> str:
    """``1 character`` / ``12,345 characters``."""
    return f"{count:,} character{'' if count == 1 else 's'}"


def middle_cut(text: str, keep: int) -> tuple[str, str, int]:
    """``(head, tail, cut)``: ``text`` kept whole when at most ``keep`` characters long,
    else its first and last ``keep // 2`` characters and how many lie between.

    The end of a value is where a long value hides what matters (an argument after
    forty line breaks, ``../.git/config`` after a run of ``./``): it is never dropped.
    """
    if len(text) <= keep:
        return text, "", 0
    head = max(keep // 2, 1)
    tail = max(keep - head, 1)
    return text[:head], text[-tail:], len(text) - head - tail


def short_value(text: str, keep: int) -> str:
    """A fact's value on one line: whole, or its start and end with the size between."""
    head, tail, cut = middle_cut(text, keep)
    if not cut:
        return text
    return f"{head} … [{char_count(cut)} not shown; whole value {size_label(text)}] … {tail}"


def is_long(text: str, limits: CardLimits) -> bool:
    """True when a value is worth folding behind its size."""
    return len(text) > limits.fold_chars or text.count("\n") >= limits.fold_lines


def ordered(arguments: Mapping[str, Any], key_order: tuple[str, ...]) -> dict[str, Any]:
    """The arguments in the tool's own order (its schema), then any others as stored.

    Keys are never sorted: a person reads them in the order the tool defines them.
    """
    result = {key: arguments[key] for key in key_order if key in arguments}
    result.update((key, value) for key, value in arguments.items() if key not in result)
    return result


def pretty_json(value: Any) -> str:
    """Indented JSON in the order given; non-JSON values shown by their text."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def text_block(label: str, text: str, limits: CardLimits, kind: BlockKind = "text") -> Block:
    """A block of text or JSON, folded with its size when long."""
    return Block(
        label=label, kind=kind, text=text, size=size_label(text), folded=is_long(text, limits)
    )


def preview_block(label: str, text: str, limits: CardLimits) -> Block:
    """A long value's start and end (``preview_chars`` in all), with its whole size."""
    head, tail, cut = middle_cut(text, limits.preview_chars)
    return Block(
        label=label,
        kind="text",
        text=head,
        tail=tail,
        gap=gap_words(cut, text) if cut else "",
        size=size_label(text),
        folded=is_long(head + tail, limits),
    )


def gap_words(cut: int, whole: str) -> str:
    """What a cut block says between its start and its end."""
    return (
        f"… {char_count(cut)} not shown here (the whole value is {size_label(whole)}): "
        "open the whole call to read every line …"
    )


@dataclass(frozen=True, slots=True)
class Diff:
    """A diff as a card shows it: its start and end lines, and its true counts."""

    lines: tuple[DiffLine, ...]
    added: int
    removed: int
    cut: int


def _diff_line(line: str) -> DiffLine:
    if line.startswith("@@"):
        return DiffLine("hunk", line)
    if line.startswith("+"):
        return DiffLine("add", line[1:])
    if line.startswith("-"):
        return DiffLine("del", line[1:])
    return DiffLine("ctx", line[1:])


def diff_lines(before: str, after: str, limits: CardLimits) -> Diff:
    """Unified diff of ``before`` → ``after``: at most ``diff_lines`` lines, the first and
    the last half of them when longer (with a gap line between), and the counts of
    added and removed lines over the whole diff."""
    raw = difflib.unified_diff(
        before.splitlines(), after.splitlines(), lineterm="", n=_DIFF_CONTEXT
    )
    every = [_diff_line(line) for line in raw if not line.startswith(("---", "+++"))]
    added = sum(1 for line in every if line.kind == "add")
    removed = sum(1 for line in every if line.kind == "del")
    keep = max(limits.diff_lines, 2)
    if len(every) <= keep:
        return Diff(tuple(every), added, removed, 0)
    head, tail = keep // 2, keep - keep // 2
    cut = len(every) - head - tail
    gap = DiffLine(
        "gap",
        f"… {cut:,} diff lines not shown here: open the whole call to read every line …",
    )
    return Diff((*every[:head], gap, *every[-tail:]), added, removed, cut)


def diff_block(label: str, before: str, after: str, limits: CardLimits, note: str = "") -> Block:
    """A diff block; folded only when very long (a diff is what a person came to read)."""
    diff = diff_lines(before, after, limits)
    notes = [note] if note else []
    if not diff.lines:
        notes.append("no change: the new content is the same as the current file")
    size = f"+{diff.added:,} −{diff.removed:,} lines"
    if diff.cut:
        size += f"; {len(diff.lines) - 1:,} of {len(diff.lines) - 1 + diff.cut:,} diff lines shown"
    return Block(
        label=label,
        kind="diff",
        lines=diff.lines,
        size=size,
        folded=len(diff.lines) > limits.diff_lines // 2,
        note="; ".join(notes),
    )
