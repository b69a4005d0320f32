"""PURE: SQL read for what it does: its statements, their keywords and first table.

Strings, quoted identifiers and comments are tokens of their own, so a keyword inside
them is never read as one (``select 1 -- delete from orders`` only selects). The card
highlights the same tokens (approvals_app.cards.sql).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_KEYWORD_TEXT: Final = """
select from where and or not insert into values update set delete merge using with as
join left right inner outer full cross on group by order having limit offset union all
distinct returning create drop alter table index view truncate grant revoke case when
then else end is null in exists between like ilike asc desc begin commit rollback
"""
KEYWORDS: Final = frozenset(_KEYWORD_TEXT.split())
# Strings, quoted identifiers and comments first, so a keyword inside them stays plain.
SQL_TOKEN: Final = re.compile(
    r"'(?:[^']|'')*'?|\"(?:[^\"]|\"\")*\"?|--[^\n]*|/\*.*?(?:\*/|$)|[A-Za-z_][A-Za-z_0-9]*|\s+|.",
    re.DOTALL,
)


_TABLE_AFTER: Final = frozenset({"FROM", "UPDATE", "INTO", "TABLE", "TRUNCATE", "JOIN"})


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a query: its keywords in order and the first table it names."""

    kind: str
    keywords: tuple[str, ...]
    table: str = ""

    @property
    def has_where(self) -> bool:
        return "WHERE" in self.keywords


def statements(query: str) -> tuple[Statement, ...]:
    """The query's statements (split at ``;`` outside strings and comments); comments
    and literals are never read as keywords."""
    found: list[Statement] = []
    keywords: list[str] = []
    table = ""
    expect_table = False
    for match in SQL_TOKEN.finditer(query):
        text = match.group(0)
        if text == ";":
            if keywords:
                found.append(Statement(keywords[0], tuple(keywords), table))
            keywords, table, expect_table = [], "", False
        elif text.lower() in KEYWORDS:
            keywords.append(text.upper())
            expect_table = not table and text.upper() in _TABLE_AFTER
        elif text[:1].isalpha() or text[:1] in ("_", '"'):
            if not keywords:
                keywords.append("?")
            if expect_table:
                table, expect_table = text, False
    if keywords:
        found.append(Statement(keywords[0], tuple(keywords), table))
    return tuple(found)


def statement_kinds(query: str) -> tuple[str, ...]:
    """The first keyword of each statement, once each, in order."""
    return tuple(dict.fromkeys(statement.kind for statement in statements(query)))
