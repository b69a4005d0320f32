"""PURE: SQL split into keyword and other tokens, for highlighting after escaping.

The template escapes every token's text and wraps keywords in a span, so a
query can never inject markup into the page. The tokens are the policy's
(approvals_app.policy.sql), so what is highlighted is what the risk read.
"""

from __future__ import annotations

from approvals_app.cards.model import SqlToken
from approvals_app.policy.sql import KEYWORDS, SQL_TOKEN, statement_kinds

__all__ = ["sql_tokens", "statement_kinds"]


def sql_tokens(query: str) -> tuple[SqlToken, ...]:
    """The query as tokens; adjacent plain tokens merged to keep the markup small."""
    tokens: list[SqlToken] = []
    for match in SQL_TOKEN.finditer(query):
        text = match.group(0)
        keyword = text.lower() in KEYWORDS
        if not keyword and tokens and not tokens[-1].keyword:
            tokens[-1] = SqlToken(tokens[-1].text + text)
        else:
            tokens.append(SqlToken(text, keyword))
    return tuple(tokens)
