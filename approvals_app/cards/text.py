"""PURE: sizes, folding, argument order, pretty JSON and diffs for approval cards."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any, Final

from approvals_app.cards.model import Block, BlockKind, CardLimits, DiffLine

_UNITS: Final = ("B", "KB", "MB", "GB")
_DIFF_CONTEXT: Final = 3


def size_label(text: str) -> str:
    """``10.4 KB · 173 lines`` for a person deciding whether to open it."""
    size = len(text.encode("utf-8", "surrogatepass"))
    lines = text.count("\n") + (0 if not text or text.endswith("\n") else 1)
    return f"{byte_label(size)} · {lines} line{'' if lines == 1 else 's'}"


def byte_label(size: int) -> str:
    """A byte count in the largest unit that keeps it at least 1."""
    value = float(size)
    for unit in _UNITS:
        if value < 1024 or unit == _UNITS[-1]:
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover - the loop always returns


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
    """The first ``preview_chars`` of a long value, with its whole size."""
    cut = len(text) > limits.preview_chars
    shown = text[: limits.preview_chars]
    note = f"first {limits.preview_chars} characters shown" if cut else ""
    return Block(
        label=label,
        kind="text",
        text=shown,
        size=size_label(text),
        folded=is_long(shown, limits),
        note=note,
    )


def diff_lines(before: str, after: str, limits: CardLimits) -> tuple[tuple[DiffLine, ...], int]:
    """Unified diff lines of ``before`` → ``after`` (at most ``diff_lines``) and the count cut."""
    lines: list[DiffLine] = []
    raw = difflib.unified_diff(
        before.splitlines(), after.splitlines(), lineterm="", n=_DIFF_CONTEXT
    )
    cut = 0
    for line in raw:
        if line.startswith(("---", "+++")) and not lines:
            continue
        if len(lines) >= limits.diff_lines:
            cut += 1
            continue
        if line.startswith("@@"):
            lines.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            lines.append(DiffLine("add", line[1:]))
        elif line.startswith("-"):
            lines.append(DiffLine("del", line[1:]))
        else:
            lines.append(DiffLine("ctx", line[1:]))
    return tuple(lines), cut


def diff_block(label: str, before: str, after: str, limits: CardLimits, note: str = "") -> Block:
    """A diff block; folded only when very long (a diff is what a person came to read)."""
    lines, cut = diff_lines(before, after, limits)
    added = sum(1 for line in lines if line.kind == "add")
    removed = sum(1 for line in lines if line.kind == "del")
    notes = [note] if note else []
    if cut:
        notes.append(f"{cut} more diff lines not shown")
    if not lines:
        notes.append("no change: the new content is the same as the current file")
    return Block(
        label=label,
        kind="diff",
        lines=lines,
        size=f"+{added} −{removed} lines",
        folded=len(lines) > limits.diff_lines // 2,
        note="; ".join(notes),
    )
