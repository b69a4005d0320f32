"""Running checked SQL on PostgreSQL through psycopg 3, in the worker process.

Why in the worker: the database category's sandbox (namespace by default) has no
network, and the target is never the agent's choice: only a connection an admin
named in the config is reached, the way web tools reach hosts through the SSRF guard
in the worker. When the database cannot be reached the call fails closed, saying so.

Reads: a READ ONLY transaction, ``statement_timeout``/``lock_timeout``/
``idle_in_transaction_session_timeout`` set locally (through ``set_config``, which
also takes the transaction's snapshot, so a later ``SET TRANSACTION READ WRITE`` is
refused by the server), then a server-side cursor: PostgreSQL declares cursors only
for SELECT and VALUES and refuses data-modifying CTEs in them, and fetching at most
``max_rows + 1`` rows keeps a huge result on the server. Always rolled back.
Writes (``db_mutate``): a READ WRITE transaction with the same timeouts, committed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolRefusedError
from tools_app.builtin.database.rows import (
    DEFAULT_MAX_RESULT_BYTES,
    QueryResult,
    StatementTimeoutError,
    streamed_result,
)

CONNECTION_LOST = "CONNECTION_LOST"

__all__ = [
    "CONNECTION_LOST",
    "StatementTimeoutError",
    "postgres_mutate",
    "postgres_read",
    "postgres_schema",
]


@contextmanager
def _connection(url: str, connect_timeout: float, name: str) -> Iterator[psycopg.Connection[Any]]:
    try:
        conn = psycopg.connect(
            url,
            connect_timeout=max(1, int(connect_timeout)),
            autocommit=False,
            application_name=f"synthorg-{name}",
        )
    except psycopg.Error as exc:
        # The driver's message can carry the host; never the URL, which holds the password.
        raise ToolFailedError(
            f"the database for connection {name!r} cannot be reached "
            f"({exc.__class__.__name__}); nothing was run",
            code="CONNECTION_FAILED",
        ) from None
    try:
        yield conn
    finally:
        conn.close()


def _limit_session(conn: psycopg.Connection[Any], timeout_seconds: float) -> None:
    milliseconds = str(max(1, int(timeout_seconds * 1000)))
    conn.execute(
        "SELECT set_config('statement_timeout', %s, true), set_config('lock_timeout', %s, true),"
        " set_config('idle_in_transaction_session_timeout', %s, true)",
        (milliseconds, milliseconds, milliseconds),
    )


@contextmanager
def _database_errors() -> Iterator[None]:
    try:
        yield
    except pg_errors.QueryCanceled:
        raise StatementTimeoutError from None
    except pg_errors.ReadOnlySqlTransaction:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            "the database refused a write inside a read-only query; use db_mutate to write",
        ) from None
    except pg_errors.InsufficientPrivilege as exc:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            f"the connection's role may not do this: {exc.diag.message_primary}",
        ) from None
    except psycopg.Error as exc:
        if exc.diag.message_primary is None and isinstance(exc, psycopg.OperationalError):
            # No word from the server: libpq dropped the connection, which is also what it
            # does when a result row does not fit the memory it may use.
            raise ToolFailedError(
                "the connection to the database was lost while the statement ran or its "
                "result was read",
                code=CONNECTION_LOST,
            ) from None
        message = exc.diag.message_primary or f"{exc.__class__.__name__}: {str(exc)[:200]}"
        raise ToolFailedError(f"the database said: {message}", code="QUERY_FAILED") from None


def _parameters(parameters: Sequence[Any] | None) -> Sequence[Any] | None:
    # None keeps `%` in the query literal; a list binds `%s` placeholders server-side.
    return list(parameters) if parameters else None


def postgres_read(
    *,
    url: str,
    name: str,
    sql: str,
    parameters: Sequence[Any] | None,
    max_rows: int,
    max_cell_chars: int,
    statement_timeout: float,
    connect_timeout: float,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
) -> QueryResult:
    """Run one read in a read-only transaction; at most ``max_rows`` rows come back."""
    with _connection(url, connect_timeout, name) as conn, _database_errors():
        conn.read_only = True
        try:
            _limit_session(conn, statement_timeout)
            with conn.cursor(name="synthorg_read") as cursor:
                cursor.execute(sql, _parameters(parameters))
                columns = [c.name for c in cursor.description or []]
                return streamed_result(
                    cursor,
                    columns,
                    max_rows=max_rows,
                    max_cell_chars=max_cell_chars,
                    max_result_bytes=max_result_bytes,
                )
        finally:
            conn.rollback()


def postgres_mutate(
    *,
    url: str,
    name: str,
    sql: str,
    parameters: Sequence[Any] | None,
    max_rows: int,
    max_cell_chars: int,
    statement_timeout: float,
    connect_timeout: float,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
) -> QueryResult:
    """Run one data change in its own transaction and commit it; RETURNING rows come back."""
    with _connection(url, connect_timeout, name) as conn, _database_errors():
        try:
            _limit_session(conn, statement_timeout)
            with conn.cursor() as cursor:
                cursor.execute(sql, _parameters(parameters))
                affected = cursor.rowcount
                columns = [c.name for c in cursor.description or []]
                result = (
                    streamed_result(
                        cursor,
                        columns,
                        max_rows=max_rows,
                        max_cell_chars=max_cell_chars,
                        max_result_bytes=max_result_bytes,
                    )
                    if cursor.description
                    else QueryResult(columns, [], truncated=False)
                )
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
    return QueryResult(
        columns=result.columns,
        rows=result.rows,
        truncated=result.truncated,
        cells_truncated=result.cells_truncated,
        row_count=affected,
    )


_SCHEMA_SQL = """
SELECT c.table_schema, c.table_name, t.table_type, c.column_name, c.data_type, c.is_nullable
FROM information_schema.columns c
JOIN information_schema.tables t
  ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE c.table_schema NOT IN ('pg_catalog', 'information_schema')
  AND c.table_schema NOT LIKE 'pg\\_toast%%'
  AND (%(schema)s::text IS NULL OR c.table_schema = %(schema)s::text)
  AND (%(table)s::text IS NULL OR c.table_name = %(table)s::text)
ORDER BY c.table_schema, c.table_name, c.ordinal_position
"""


def postgres_schema(
    *,
    url: str,
    name: str,
    schema: str | None,
    table: str | None,
    statement_timeout: float,
    connect_timeout: float,
) -> list[tuple[str, str, str, str, str, bool]]:
    """(schema, table, kind, column, type, nullable) for the tables the role can see."""
    with _connection(url, connect_timeout, name) as conn, _database_errors():
        conn.read_only = True
        try:
            _limit_session(conn, statement_timeout)
            rows = conn.execute(_SCHEMA_SQL, {"schema": schema, "table": table}).fetchall()
        finally:
            conn.rollback()
    return [(s, t, k, c, d, n == "YES") for s, t, k, c, d, n in rows]
