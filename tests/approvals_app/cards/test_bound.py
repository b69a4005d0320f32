"""A card's size is bounded whatever the call carries (pure)."""

from __future__ import annotations

from approvals_app.cards.model import Card, CardInput, CardLimits, CurrentFile
from approvals_app.cards.render import render_card

LIMITS = CardLimits(shown_chars=4_000)


def _size(card: Card) -> int:
    parts = [card.raw_json, *(f.value for f in card.facts)]
    for block in card.blocks:
        parts.append(block.text)
        parts.extend(line.text for line in block.lines)
        parts.extend(token.text for token in block.tokens)
        parts.extend(header.value for header in block.headers)
    return sum(len(part) for part in parts)


def _write(content: str) -> CardInput:
    return CardInput(
        tool="write_file",
        category="file_system",
        arguments={"path": "notes/big.txt", "content": content},
        key_order=("path", "content"),
        current_file=CurrentFile(status="missing"),
    )


def test_a_megabyte_write_gives_a_card_of_bounded_size_that_says_what_was_cut() -> None:
    for content in ("x" * 1_000_000, "line of text\n" * 80_000, "é" * 500_000):
        card = render_card(_write(content), LIMITS)
        # Every block and the raw JSON at most 4,000 characters (plus the cut mark).
        assert _size(card) < 4 * (LIMITS.shown_chars + 10) + 2_000
        assert any("cut at 4,000 characters" in note for note in card.notes), card.notes
        assert "GET /api/v1/approvals/<id>/" in card.notes[-1]
        assert card.facts[0].value == "notes/big.txt"  # the path is still shown first


def test_control_a_small_write_is_shown_whole_with_no_cut_note() -> None:
    content = "hello\nworld\n"
    card = render_card(_write(content), LIMITS)
    assert not any("cut at" in note for note in card.notes)
    assert '"content": "hello\\nworld\\n"' in card.raw_json


def test_a_long_sql_statement_and_a_long_header_are_cut_too() -> None:
    sql = render_card(
        CardInput(tool="sql_query", category="database",
                  arguments={"connection": "main", "query": "SELECT 1 " * 5_000}),
        LIMITS,
    )  # fmt: skip
    assert sum(len(t.text) for b in sql.blocks for t in b.tokens) <= LIMITS.shown_chars + 1
    http = render_card(
        CardInput(tool="http_request", category="network",
                  arguments={"url": "http://example.test/", "method": "GET",
                             "headers": {"X-Note": "n" * 50_000}}),
        LIMITS,
    )  # fmt: skip
    assert all(len(h.value) <= LIMITS.shown_chars + 1 for b in http.blocks for h in b.headers)
    assert any("cut at" in note for note in http.notes)
