"""PURE: the display model of an approval card (what the templates render)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

BlockKind = Literal["text", "json", "diff", "sql", "headers", "command"]
DiffKind = Literal["add", "del", "ctx", "hunk"]
CurrentStatus = Literal["read", "missing", "unreadable"]


@dataclass(frozen=True, slots=True)
class CardLimits:
    """Sizes past which a value is folded or cut (from the settings)."""

    fold_chars: int = 1200
    fold_lines: int = 24
    diff_lines: int = 600
    preview_chars: int = 2000
    fact_chars: int = 300
    shown_chars: int = 32_000  # of any one block and of the raw JSON (the card's bound)


@dataclass(frozen=True, slots=True)
class CurrentFile:
    """The file a write or edit would change, as read now (or why it was not)."""

    status: CurrentStatus
    text: str = ""
    size: int = 0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class CardInput:
    """Everything the core needs about one call."""

    tool: str
    category: str
    arguments: Mapping[str, Any]
    key_order: tuple[str, ...] = ()
    current_file: CurrentFile | None = None


@dataclass(frozen=True, slots=True)
class Fact:
    """One labelled short value shown at the top of the card (path, command line, URL...)."""

    label: str
    value: str
    mono: bool = True


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: DiffKind
    text: str


@dataclass(frozen=True, slots=True)
class SqlToken:
    text: str
    keyword: bool = False


@dataclass(frozen=True, slots=True)
class Header:
    name: str
    value: str
    masked: bool = False


@dataclass(frozen=True, slots=True)
class Block:
    """A larger part of the call: a diff, a body, SQL, headers, JSON.

    ``folded`` blocks are shown closed, with their ``size`` in the summary.
    """

    label: str
    kind: BlockKind
    text: str = ""
    lines: tuple[DiffLine, ...] = ()
    tokens: tuple[SqlToken, ...] = ()
    headers: tuple[Header, ...] = ()
    size: str = ""
    folded: bool = False
    note: str = ""


@dataclass(frozen=True, slots=True)
class Card:
    """What a person reads before deciding: facts first, then blocks, raw JSON last."""

    tool: str
    renderer: str
    facts: tuple[Fact, ...]
    blocks: tuple[Block, ...]
    raw_json: str
    raw_size: str
    notes: tuple[str, ...] = field(default=())
