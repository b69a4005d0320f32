"""A card's size is bounded whatever the call carries.

Folding only closes a value; the text still travels in the page and in every live
frame. One call with a megabyte of content would make its row larger than the
largest message the operators' socket may send, and every inbox would lose its
connection while that request waits. So each block and the raw JSON keep at most
``shown_chars`` characters, and the card says what was cut and where the whole
call is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from approvals_app.cards.model import Block, Card, DiffLine, Header, SqlToken
from approvals_app.cards.text import size_label

T = TypeVar("T")

WHERE_WHOLE = "the whole call is in the API (GET /api/v1/approvals/<id>/) and the audit trail"


def card_bounded(card: Card, shown_chars: int) -> Card:
    """``card`` with every block and the raw JSON cut to ``shown_chars`` characters."""
    cut: list[str] = []
    blocks = []
    for block in card.blocks:
        bounded = _block_bounded(block, shown_chars)
        if bounded is not block:
            cut.append(block.label)
        blocks.append(bounded)
    raw = card.raw_json
    if len(raw) > shown_chars:
        raw = raw[:shown_chars] + "\n…"
        cut.append("raw arguments")
    if not cut:
        return card
    note = f"{', '.join(cut)} cut at {shown_chars:,} characters: {WHERE_WHOLE}"
    return dataclasses.replace(card, blocks=tuple(blocks), raw_json=raw, notes=(*card.notes, note))


def _block_bounded(block: Block, limit: int) -> Block:
    changes: dict[str, Any] = {}
    if len(block.text) > limit:
        changes["text"] = block.text[:limit] + "\n…"
    lines = _within(block.lines, limit, lambda line: line.text, _line_cut)
    if lines is not block.lines:
        changes["lines"] = lines
    tokens = _within(block.tokens, limit, lambda token: token.text, _token_cut)
    if tokens is not block.tokens:
        changes["tokens"] = tokens
    headers = _within(block.headers, limit, lambda header: header.value, _header_cut)
    if headers is not block.headers:
        changes["headers"] = headers
    if not changes:
        return block
    if not block.size:
        changes["size"] = size_label(block.text) if block.text else ""
    return dataclasses.replace(block, **changes)


def _within(
    items: tuple[T, ...], limit: int, text_of: Callable[[T], str], cut: Callable[[T, int], T]
) -> tuple[T, ...]:
    """The leading items whose text adds up to at most ``limit`` characters, the last cut."""
    total = 0
    for index, item in enumerate(items):
        size = len(text_of(item))
        if total + size > limit:
            return (*items[:index], cut(item, max(0, limit - total)))
        total += size
    return items


def _line_cut(line: DiffLine, keep: int) -> DiffLine:
    return dataclasses.replace(line, text=line.text[:keep] + "…")


def _token_cut(token: SqlToken, keep: int) -> SqlToken:
    return dataclasses.replace(token, text=token.text[:keep] + "…")


def _header_cut(header: Header, keep: int) -> Header:
    return dataclasses.replace(header, value=header.value[:keep] + "…")
