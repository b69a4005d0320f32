"""PURE: the display model of an approval card (what the templates render)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from approvals_app.cards.characters import CharFlag

BlockKind = Literal["text", "json", "diff", "sql", "headers", "command", "argv"]
DiffKind = Literal["add", "del", "ctx", "hunk", "gap"]
CurrentStatus = Literal["read", "missing", "unreadable"]


@dataclass(frozen=True, slots=True)
class CardLimits:
    """Sizes past which a value is folded or cut (from the settings)."""

    fold_chars: int = 1200
    fold_lines: int = 24
    diff_lines: int = 600
    preview_chars: int = 2000
    fact_chars: int = 300
    effect_chars: int = 600  # of the effect line; a longer one loses its middle
    shown_chars: int = 32_000  # of any one block and of the raw JSON (the card's bound)


@dataclass(frozen=True, slots=True)
class CurrentFile:
    """The file a write or edit would change, as read now (or why it was not)."""

    status: CurrentStatus
    text: str = ""
    size: int = 0
    reason: str = ""


TargetKind = Literal["file", "directory", "link", "special", "missing", "unreadable"]


@dataclass(frozen=True, slots=True)
class FileTarget:
    """What a file call's path names now, looked at without following a link
    (``unreadable``: why it could not be looked at)."""

    kind: TargetKind
    size: int = 0
    links: int = 0
    link_to: str = ""
    reason: str = ""


@dataclass(frozen=True, slots=True)
class CardInput:
    """Everything the core needs about one call.

    ``arguments`` are the call's own, exactly as it will run (only values the console
    holds as secrets masked by the caller). ``argument_roles`` and ``workspace_roots``
    let the card read paths and URLs the way the policy read them.
    """

    tool: str
    category: str
    arguments: Mapping[str, Any]
    key_order: tuple[str, ...] = ()
    current_file: CurrentFile | None = None
    argument_roles: Mapping[str, str] = field(default_factory=dict)
    workspace_roots: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Effect:
    """The card's first line: what the call does, as the policy resolved it.

    A line longer than the limit loses its middle, never its end: ``head``, then
    ``cut`` (what is not shown and the whole size), then ``tail``.
    """

    text: str
    head: str
    tail: str = ""
    cut: str = ""
    notes: tuple[str, ...] = ()


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
    """One request header, its value exactly as sent; ``reference`` when the value is
    a secret reference the console fills in on the way out."""

    name: str
    value: str
    reference: bool = False


@dataclass(frozen=True, slots=True)
class Block:
    """A larger part of the call: a diff, a body, SQL, headers, JSON, a program's argv.

    ``folded`` blocks are shown closed, with their ``size`` in the summary. A block cut
    to the card's bound keeps its start (``text``, ``lines``...) and its end (``tail``,
    ``tail_lines``...), with ``gap`` saying what lies between and where it is.
    """

    label: str
    kind: BlockKind
    text: str = ""
    lines: tuple[DiffLine, ...] = ()
    tokens: tuple[SqlToken, ...] = ()
    headers: tuple[Header, ...] = ()
    items: tuple[str, ...] = ()
    size: str = ""
    folded: bool = False
    note: str = ""
    tail: str = ""
    tail_lines: tuple[DiffLine, ...] = ()
    tail_tokens: tuple[SqlToken, ...] = ()
    tail_headers: tuple[Header, ...] = ()
    tail_items: tuple[str, ...] = ()
    gap: str = ""


@dataclass(frozen=True, slots=True)
class FlaggedValue:
    """Characters to look at twice in one argument (``where``: its path in the call)."""

    where: str
    flags: tuple[CharFlag, ...]


@dataclass(frozen=True, slots=True)
class Card:
    """What a person reads before deciding: the effect first, facts, blocks, raw JSON last."""

    tool: str
    renderer: str
    effect: Effect
    facts: tuple[Fact, ...]
    blocks: tuple[Block, ...]
    raw_json: str
    raw_size: str
    notes: tuple[str, ...] = field(default=())
    flagged: tuple[FlaggedValue, ...] = ()
    raw_tail: str = ""
    raw_gap: str = ""
    cut: bool = False
