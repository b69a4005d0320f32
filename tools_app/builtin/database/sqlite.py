"""Running checked SQL on an SQLite file named in the config, in the worker process.

Reads open the file with ``mode=ro`` (the library refuses every write, and never
creates the file), turn on ``query_only`` and install an authorizer that permits
reading and nothing else — no ATTACH, PRAGMA, or schema change, whatever the text
says. Writes (``db_mutate``) open ``mode=rw`` with an authorizer that permits row
changes but no schema change, ATTACH or PRAGMA. A progress handler interrupts a
statement that runs past its timeout.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolRefusedError
from tools_app.builtin.database.rows import (
    DEFAULT_MAX_RESULT_BYTES,
    QueryMemoryExceededError,
    QueryResult,
    StatementTimeoutError,
    streamed_result,
)

_READ_ACTIONS: Final = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
_WRITE_ACTIONS: Final = _READ_ACTIONS | frozenset(
    {
        sqlite3.SQLITE_INSERT,
        sqlite3.SQLITE_UPDATE,
        sqlite3.SQLITE_DELETE,
        sqlite3.SQLITE_TRANSACTION,
    }
)
# Run the progress handler every this many virtual-machine instructions.
_PROGRESS_STEPS: Final = 1000
DEFAULT_MAX_VALUE_BYTES: Final = 16 * 1024 * 1024


def _authorizer(allowed: frozenset[int]) -> Callable[..., int]:
    def authorize(action: int, *_: object) -> int:
        return sqlite3.SQLITE_OK if action in allowed else sqlite3.SQLITE_DENY

    return authorize


@contextmanager
def _open(
    path: str,
    *,
    name: str,
    writable: bool,
    timeout: float,
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
) -> Iterator[sqlite3.Connection]:
    if not Path(path).is_file():
        raise ToolFailedError(
            f"the SQLite file of connection {name!r} does not exist; nothing was run",
            code="CONNECTION_FAILED",
        )
    mode = "rw" if writable else "ro"
    try:
        conn = sqlite3.connect(
            f"file:{quote(path)}?mode={mode}", uri=True, timeout=timeout, isolation_level=None
        )
    except sqlite3.Error as exc:
        raise ToolFailedError(
            f"the SQLite file of connection {name!r} cannot be opened ({exc})",
            code="CONNECTION_FAILED",
        ) from None
    # No string, blob or row may grow past this: randomblob(1e9) fails at once.
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
    deadline = time.monotonic() + timeout
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_STEPS)
    try:
        if not writable:
            conn.execute("PRAGMA query_only = ON")
        conn.set_authorizer(_authorizer(_WRITE_ACTIONS if writable else _READ_ACTIONS))
        yield conn
    except sqlite3.Error as exc:
        message = str(exc)
        if "interrupted" in message:
            raise StatementTimeoutError from None
        if "too big" in message:
            raise ToolRefusedError(
                RefusalCode.LIMIT_EXCEEDED,
                f"a value in this statement would be larger than {max_value_bytes} bytes, "
                "the limit for one string, blob or row (max_value_bytes)",
            ) from None
        if "out of memory" in message:
            raise QueryMemoryExceededError from None
        if "not authorized" in message or "readonly" in message:
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT,
                f"the database refused this statement for this tool: {message}",
            ) from None
        raise ToolFailedError(f"the database said: {message}", code="QUERY_FAILED") from None
    finally:
        conn.close()


def sqlite_read(
    *,
    path: str,
    name: str,
    sql: str,
    parameters: Sequence[Any] | None,
    max_rows: int,
    max_cell_chars: int,
    statement_timeout: float,
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
) -> QueryResult:
    """One read on a read-only handle; at most ``max_rows`` rows come back."""
    with _open(
        path, name=name, writable=False, timeout=statement_timeout, max_value_bytes=max_value_bytes
    ) as conn:
        cursor = conn.execute(sql, list(parameters or ()))
        columns = [c[0] for c in cursor.description or []]
        return streamed_result(
            cursor,
            columns,
            max_rows=max_rows,
            max_cell_chars=max_cell_chars,
            max_result_bytes=max_result_bytes,
        )


def sqlite_mutate(
    *,
    path: str,
    name: str,
    sql: str,
    parameters: Sequence[Any] | None,
    max_rows: int,
    max_cell_chars: int,
    statement_timeout: float,
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    commit: bool = True,
) -> QueryResult:
    """One row change in its own transaction, committed; RETURNING rows come back.

    ``commit`` False rolls the change back once it is counted (a preview before approval:
    SQLite undoes all of it, triggers and ``sqlite_sequence`` included)."""
    with _open(
        path, name=name, writable=True, timeout=statement_timeout, max_value_bytes=max_value_bytes
    ) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            cursor = conn.execute(sql, list(parameters or ()))
            columns = [c[0] for c in cursor.description or []]
            result = streamed_result(
                cursor,
                columns,
                max_rows=max_rows,
                max_cell_chars=max_cell_chars,
                max_result_bytes=max_result_bytes,
            )
            # RETURNING rows past the limit must still be stepped through to finish the change,
            # one at a time so they are never held together.
            while cursor.fetchone() is not None:
                pass
            affected = conn.total_changes
            conn.execute("COMMIT" if commit else "ROLLBACK")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return QueryResult(
        columns=result.columns,
        rows=result.rows,
        truncated=result.truncated,
        cells_truncated=result.cells_truncated,
        row_count=affected,
    )


def sqlite_schema(
    *, path: str, name: str, table: str | None, statement_timeout: float
) -> list[tuple[str, str, str, str, str, bool]]:
    """(schema, table, kind, column, type, nullable) for the file's tables and views."""
    with _open(path, name=name, writable=False, timeout=statement_timeout) as conn:
        conn.set_authorizer(None)  # our own catalogue queries read sqlite_master and pragmas
        tables = conn.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"
            " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND (? IS NULL OR name = ?)"
            " ORDER BY name",
            (table, table),
        ).fetchall()
        found: list[tuple[str, str, str, str, str, bool]] = []
        for table_name, kind in tables:
            columns = conn.execute(
                'SELECT name, type, "notnull" FROM pragma_table_info(?) ORDER BY cid',
                (table_name,),
            ).fetchall()
            kind_name = "VIEW" if kind == "view" else "BASE TABLE"
            found.extend(
                ("main", table_name, kind_name, column, ctype or "", not notnull)
                for column, ctype, notnull in columns
            )
    return found
