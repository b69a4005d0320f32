"""A card's size is bounded whatever the call carries.

Folding only closes a value; the text still travels in the page and in every live
frame. One call with a megabyte of content would make its row larger than the
largest message the operators' socket may send, and every inbox would lose its
connection while that request waits. So each block and the raw JSON keep at most
``shown_chars`` characters: their start and their end, never the start alone (the
end is where a long value hides what matters), with what lies between counted and
the whole call one click away.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from approvals_app.cards.model import Block, Card, DiffLine, Header, SqlToken
from approvals_app.cards.text import char_count, gap_words, middle_cut, size_label

T = TypeVar("T")

WHERE_WHOLE = "every argument in full is on the whole call's page (the link on this card)"


def card_bounded(card: Card, shown_chars: int) -> Card:
    """``card`` with every block and the raw JSON cut to ``shown_chars`` characters."""
    cut: list[str] = []
    blocks = []
    for block in card.blocks:
        bounded = _block_bounded(block, shown_chars)
        if bounded is not block:
            cut.append(block.label)
        blocks.append(bounded)
    head, tail, gap = middle_cut(card.raw_json, shown_chars)
    if gap:
        cut.append("raw arguments")
    if not cut:
        return card
    note = (
        f"{', '.join(cut)}: start and end shown, {shown_chars:,} characters each at most; "
        f"{WHERE_WHOLE}"
    )
    return dataclasses.replace(
        card,
        blocks=tuple(blocks),
        raw_json=head,
        raw_tail=tail,
        raw_gap=gap_words(gap, card.raw_json) if gap else "",
        notes=(*card.notes, note),
        cut=True,
    )


def _block_bounded(block: Block, limit: int) -> Block:
    changes: dict[str, Any] = {}
    if len(block.text) + len(block.tail) > limit:
        whole = block.text + block.tail
        head, tail, gap = middle_cut(whole, limit)
        changes.update(text=head, tail=tail, gap=gap_words(gap, whole))
    for name, text_of, cutter in (
        ("lines", lambda line: line.text, _line_cut),
        ("tokens", lambda token: token.text, _token_cut),
        ("headers", lambda header: header.name + header.value, _header_cut),
        ("items", lambda item: item, _item_cut),
    ):
        items = getattr(block, name)
        split = _ends(items, limit, text_of, cutter)
        if split is not None:
            head_items, tail_items, dropped = split
            changes[name] = head_items
            changes[f"tail_{name}"] = tail_items
            if dropped:
                changes["gap"] = (
                    f"… {dropped:,} of {len(items):,} {'lines' if name == 'lines' else 'parts'} "
                    "not shown here: open the whole call to read every one …"
                )
    if not changes:
        return block
    if not block.size:
        whole_text = block.text + block.tail
        changes["size"] = size_label(whole_text) if whole_text else ""
    return dataclasses.replace(block, **changes)


def _ends(
    items: tuple[T, ...], limit: int, text_of: Callable[[T], str], cut: Callable[[T, int], T]
) -> tuple[tuple[T, ...], tuple[T, ...], int] | None:
    """The leading and the trailing items whose text adds up to at most ``limit``
    characters (half each, an item too long for its half cut in its middle), and how many
    items lie between; None when all fit."""
    if sum(len(text_of(item)) for item in items) <= limit:
        return None
    half = max(limit // 2, 1)
    head: list[T] = []
    total = 0
    for item in items:
        size = len(text_of(item))
        if total + size > half:
            if total < half:
                head.append(cut(item, half - total))
            break
        head.append(item)
        total += size
    tail: list[T] = []
    total = 0
    for item in reversed(items[len(head) :]):
        size = len(text_of(item))
        if total + size > half:
            if total < half and len(head) + len(tail) < len(items):
                tail.append(cut(item, half - total))
            break
        tail.append(item)
        total += size
    tail.reverse()
    return tuple(head), tuple(tail), len(items) - len(head) - len(tail)


def _middle(text: str, keep: int) -> str:
    head, tail, gap = middle_cut(text, keep)
    return f"{head} … [{char_count(gap)} not shown] … {tail}" if gap else text


def _line_cut(line: DiffLine, keep: int) -> DiffLine:
    return dataclasses.replace(line, text=_middle(line.text, keep))


def _token_cut(token: SqlToken, keep: int) -> SqlToken:
    return dataclasses.replace(token, text=_middle(token.text, keep))


def _header_cut(header: Header, keep: int) -> Header:
    return dataclasses.replace(header, value=_middle(header.value, max(keep - len(header.name), 1)))


def _item_cut(item: str, keep: int) -> str:
    return _middle(item, keep)
