"""PURE: SQL split into keyword and other tokens, for highlighting after escaping.

The template escapes every token's text and wraps keywords in a span, so a
query can never inject markup into the page.
"""

from __future__ import annotations

import re
from typing import Final

from approvals_app.cards.model import SqlToken

_KEYWORD_TEXT: Final = """
select from where and or not insert into values update set delete merge using with as
join left right inner outer full cross on group by order having limit offset union all
distinct returning create drop alter table index view truncate grant revoke case when
then else end is null in exists between like ilike asc desc begin commit rollback
"""
KEYWORDS: Final = frozenset(_KEYWORD_TEXT.split())
# Strings, quoted identifiers and comments first, so a keyword inside them stays plain.
_TOKEN: Final = re.compile(
    r"'(?:[^']|'')*'?|\"(?:[^\"]|\"\")*\"?|--[^\n]*|/\*.*?(?:\*/|$)|[A-Za-z_][A-Za-z_0-9]*|\s+|.",
    re.DOTALL,
)


def sql_tokens(query: str) -> tuple[SqlToken, ...]:
    """The query as tokens; adjacent plain tokens merged to keep the markup small."""
    tokens: list[SqlToken] = []
    for match in _TOKEN.finditer(query):
        text = match.group(0)
        keyword = text.lower() in KEYWORDS
        if not keyword and tokens and not tokens[-1].keyword:
            tokens[-1] = SqlToken(tokens[-1].text + text)
        else:
            tokens.append(SqlToken(text, keyword))
    return tuple(tokens)


def statement_kind(query: str) -> str:
    """The first keyword of the statement (SELECT, UPDATE...), or ``?``."""
    for token in sql_tokens(query):
        if token.keyword:
            return token.text.upper()
        if token.text.strip() and not token.text.lstrip().startswith(("--", "/*", "(")):
            return "?"
    return "?"
