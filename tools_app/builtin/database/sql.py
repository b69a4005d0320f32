"""PURE: a first, static look at an agent's SQL before any connection is opened.

The tokenizer knows PostgreSQL's and SQLite's lexical forms well enough to tell code
from text: ``'strings'`` (with ``''``), ``E'escapes\\''``, ``$tag$ dollar quotes $tag$``,
``"identifiers"``, ``-- line`` and nested ``/* block */`` comments. Keywords hidden in
those never count; keywords in code always do. This check is the first of three
layers, not the only one: reads also run as a server-side cursor (which PostgreSQL
accepts only for SELECT and VALUES) inside a READ ONLY transaction, and on SQLite
under ``mode=ro`` with an authorizer that permits reading only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from tools_app.builtin.base import RefusalCode, ToolRefusedError

READ_STARTS: Final = frozenset({"SELECT", "WITH", "VALUES", "TABLE"})
MUTATE_STARTS: Final = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE", "WITH"})
DML_WORDS: Final = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE"})
# Words that make a read write, lock, or leave the transaction: `SELECT … INTO t`
# creates a table, `FOR UPDATE` locks rows, COPY can run programs on the server.
READ_FORBIDDEN_WORDS: Final = DML_WORDS | frozenset(
    {
        "INTO", "COPY", "CREATE", "ALTER", "DROP", "TRUNCATE", "GRANT", "REVOKE",
        "COMMIT", "ROLLBACK", "SAVEPOINT", "BEGIN", "SET", "RESET", "LOCK", "CALL",
        "DO", "EXECUTE", "PREPARE", "LISTEN", "NOTIFY", "VACUUM", "ANALYZE",
        "REINDEX", "CLUSTER", "REFRESH", "ATTACH", "DETACH", "PRAGMA", "SHARE",
    }
)  # fmt: skip
# Schema changes belong to db:admin, never to db_mutate. (SET and DO are legal inside
# UPDATE … SET and ON CONFLICT DO; a statement starting with them is refused anyway.)
MUTATE_FORBIDDEN_WORDS: Final = frozenset(
    {
        "COPY", "CREATE", "ALTER", "DROP", "TRUNCATE", "GRANT", "REVOKE", "COMMIT",
        "ROLLBACK", "SAVEPOINT", "BEGIN", "RESET", "LOCK", "CALL", "EXECUTE", "PREPARE",
        "VACUUM", "REINDEX", "CLUSTER", "ATTACH", "DETACH", "PRAGMA", "LISTEN", "NOTIFY",
    }
)  # fmt: skip
# Server functions with effects outside the query's own rows. The connection's role
# is the real boundary (give it SELECT only); this list catches the obvious cases early.
FORBIDDEN_FUNCTIONS: Final = frozenset(
    {
        "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile",
        "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "lo_import",
        "lo_export", "lo_unlink", "dblink", "dblink_exec", "dblink_connect", "set_config",
        "nextval", "setval", "pg_advisory_lock", "pg_advisory_xact_lock",
        "pg_try_advisory_lock", "pg_switch_wal", "pg_create_restore_point", "load_extension",
        "fts3_tokenizer",
    }
)  # fmt: skip

_WORD_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_DOLLAR_TAG_RE: Final = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")


class SqlLexError(ValueError):
    """The text does not end where SQL can end (an open string, comment or quote)."""


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement's bare words (upper-cased), in order; text and comments left out."""

    words: tuple[str, ...]
    functions: tuple[str, ...]

    @property
    def first(self) -> str:
        return self.words[0] if self.words else ""


def _skip_quoted(sql: str, start: int, quote: str, backslashes: bool) -> int:
    index = start + 1
    while index < len(sql):
        char = sql[index]
        if backslashes and char == "\\":
            index += 2
            continue
        if char == quote:
            if index + 1 < len(sql) and sql[index + 1] == quote:
                index += 2
                continue
            return index + 1
        index += 1
    raise SqlLexError(f"an unterminated {quote} quote")


def _skip_block_comment(sql: str, start: int) -> int:
    depth, index = 0, start
    while index < len(sql):
        pair = sql[index : index + 2]
        if pair == "/*":
            depth, index = depth + 1, index + 2
        elif pair == "*/":
            depth, index = depth - 1, index + 2
            if depth == 0:
                return index
        else:
            index += 1
    raise SqlLexError("an unterminated /* comment")


def split_statements(sql: str) -> list[Statement]:
    """The statements of ``sql`` by their code words; empty statements dropped."""
    statements: list[Statement] = []
    words: list[str] = []
    functions: list[str] = []
    index, length = 0, len(sql)
    while index < length:
        char = sql[index]
        if char in " \t\r\n\f\v":
            index += 1
        elif sql.startswith("--", index):
            newline = sql.find("\n", index)
            index = length if newline < 0 else newline + 1
        elif sql.startswith("/*", index):
            index = _skip_block_comment(sql, index)
        elif char == "'":
            index = _skip_quoted(sql, index, "'", backslashes=False)
        elif char == '"' or char == "`":
            index = _skip_quoted(sql, index, char, backslashes=False)
        elif char == "[":
            end = sql.find("]", index)  # SQLite's bracketed identifiers
            if end < 0:
                raise SqlLexError("an unterminated [ identifier")
            index = end + 1
        elif char == "$" and (tag := _DOLLAR_TAG_RE.match(sql, index)):
            end = sql.find(tag.group(), tag.end())
            if end < 0:
                raise SqlLexError(f"an unterminated {tag.group()} dollar quote")
            index = end + len(tag.group())
        elif char == ";":
            if words:
                statements.append(Statement(tuple(words), tuple(functions)))
            words, functions = [], []
            index += 1
        elif match := _WORD_RE.match(sql, index):
            word = match.group()
            # E'…' (and e'…') strings allow backslash escapes of the quote.
            if word in ("E", "e") and sql.startswith("'", match.end()):
                index = _skip_quoted(sql, match.end(), "'", backslashes=True)
                continue
            words.append(word.upper())
            rest = sql[match.end() :].lstrip()
            if rest.startswith("("):
                functions.append(word.lower())
            index = match.end()
        else:
            index += 1
    if words:
        statements.append(Statement(tuple(words), tuple(functions)))
    return statements


def _one_statement(sql: str) -> Statement:
    if "\x00" in sql:
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "the query contains a NUL byte")
    try:
        statements = split_statements(sql)
    except SqlLexError as exc:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, f"the query does not parse: {exc}"
        ) from None
    if not statements:
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "the query is empty")
    if len(statements) > 1:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            f"the query holds {len(statements)} statements; send exactly one per call",
        )
    statement = statements[0]
    denied = sorted(set(statement.functions) & FORBIDDEN_FUNCTIONS)
    if denied:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            f"the function {denied[0]}() acts outside the query's rows and is refused",
        )
    return statement


def check_read_query(sql: str) -> None:
    """Refuse anything but one SELECT / WITH / VALUES / TABLE statement that only reads."""
    statement = _one_statement(sql)
    if statement.first not in READ_STARTS:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            f"sql_query only reads: a {statement.first} statement is refused "
            "(start with SELECT, WITH, VALUES or TABLE; writes go through db_mutate)",
        )
    found = sorted(set(statement.words) & READ_FORBIDDEN_WORDS)
    if found:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            f"sql_query only reads: {found[0]} is refused in a query "
            "(writes go through db_mutate, schema changes are an admin's)",
        )


def check_mutation(sql: str) -> None:
    """Refuse anything but one INSERT / UPDATE / DELETE / MERGE (optionally WITH …)."""
    statement = _one_statement(sql)
    if statement.first not in MUTATE_STARTS:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            f"db_mutate changes rows only: a {statement.first} statement is refused "
            "(schema changes are db:admin)",
        )
    found = sorted(set(statement.words) & MUTATE_FORBIDDEN_WORDS)
    if found:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, f"db_mutate changes rows only: {found[0]} is refused"
        )
    if not set(statement.words) & DML_WORDS:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            "db_mutate needs an INSERT, UPDATE, DELETE or MERGE; use sql_query to read",
        )
