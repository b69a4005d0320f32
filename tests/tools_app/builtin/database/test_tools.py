"""Database tools run in-process against a scratch PostgreSQL database and an SQLite file.

Each attack is tried at the static check and, where it matters, again directly at
the engine layer, so a gap in one layer would show.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.tools_app.builtin.database.test_support import (
    PASSWORD,
    ROWS,
    db_context,
    pg_scalar,
    pg_url,
    sqlite_path,
)
from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolOutcome, ToolRefusedError
from tools_app.builtin.database.config import connection_passwords
from tools_app.builtin.database.postgres import StatementTimeoutError, postgres_read
from tools_app.builtin.database.sql import split_statements
from tools_app.builtin.database.sqlite import sqlite_read
from tools_app.builtin.database.tools import DbMutateTool, SchemaInspectTool, SqlQueryTool

__all__ = ["pg_url", "sqlite_path"]

QUERY, SCHEMA, MUTATE = SqlQueryTool(), SchemaInspectTool(), DbMutateTool()


def _settings(pg: str, lite: Path | None = None, **extra: Any) -> dict[str, Any]:
    connections: dict[str, Any] = {
        "main": {"url": pg},
        "private": {"url": pg, "agents": ["someone-else"]},
    }
    if lite is not None:
        connections["lite"] = {"url": f"sqlite:///{lite}"}
    return {"connections": connections, "max_rows": 10, "statement_timeout_seconds": 1, **extra}


def _run(tool: Any, settings: Mapping[str, Any], **arguments: Any) -> ToolOutcome:
    outcome: ToolOutcome = tool.run(db_context(settings), arguments)
    return outcome


def _refusal(call: Callable[[], object]) -> ToolRefusedError:
    with pytest.raises(ToolRefusedError) as caught:
        call()
    return caught.value


# --- reads -------------------------------------------------------------------


@pytest.mark.parametrize("connection", ["main", "lite"])
def test_rows_come_back_with_columns_and_a_truncation_flag(
    pg_url: str, sqlite_path: Path, connection: str
) -> None:
    settings = _settings(pg_url, sqlite_path)
    outcome = _run(QUERY, settings, connection=connection, query="SELECT * FROM items ORDER BY id")
    found = outcome.structured
    assert found is not None and found["columns"] == ["id", "name", "note"]
    assert len(found["rows"]) == 10 and found["rows"][0][:2] == [1, "item 1"]
    assert found["truncated"] is True and outcome.truncated is True
    few = _run(QUERY, settings, connection=connection, query="SELECT id FROM items WHERE id < 4")
    assert few.structured is not None and few.structured["truncated"] is False
    assert few.structured["rows"] == [[1], [2], [3]]


def test_parameters_are_bound_and_a_literal_percent_survives(pg_url: str) -> None:
    settings = _settings(pg_url)
    bound = _run(
        QUERY, settings, connection="main", query="SELECT name FROM items WHERE id = %s",
        parameters=[3],
    )  # fmt: skip
    assert bound.structured is not None and bound.structured["rows"] == [["item 3"]]
    literal = _run(QUERY, settings, connection="main", query="SELECT 'a%b; DROP TABLE x' AS t")
    assert literal.structured is not None and literal.structured["rows"] == [["a%b; DROP TABLE x"]]


def test_long_cells_are_cut_and_flagged(pg_url: str) -> None:
    outcome = _run(
        QUERY, _settings(pg_url, max_cell_chars=16), connection="main",
        query="SELECT repeat('y', 100) AS long",
    )  # fmt: skip
    assert outcome.structured is not None and outcome.structured["cells_truncated"] is True
    assert outcome.structured["rows"][0][0] == "y" * 16 + "…"


WRITES_THROUGH_SQL_QUERY = [
    "INSERT INTO items VALUES (100, 'x', 'y')",
    "UPDATE items SET name = 'changed'",
    "DELETE FROM items",
    "DROP TABLE items",
    "CREATE TABLE planted (a int)",
    "ALTER TABLE items ADD COLUMN planted int",
    "TRUNCATE items",
    "SELECT 1; DROP TABLE items",
    "SELECT 1 -- a comment\n; DROP TABLE items",
    "SELECT 1 /* ; */ ; DELETE FROM items",
    "WITH gone AS (DELETE FROM items RETURNING *) SELECT * FROM gone",
    "WITH moved AS (UPDATE items SET name = 'x' RETURNING id) SELECT count(*) FROM moved",
    "COPY items TO PROGRAM 'touch /tmp/synthorg-copy-planted'",
    "COPY (SELECT 1) TO '/tmp/synthorg-copy-planted'",
    "SET TRANSACTION READ WRITE",
    "SELECT * INTO planted FROM items",
    "SELECT * FROM items FOR UPDATE",
    "SELECT set_config('transaction_read_only', 'off', false)",
    "SELECT nextval('counter')",
    "SELECT pg_terminate_backend(pg_backend_pid())",
    "BEGIN; UPDATE items SET name = 'x'; COMMIT",
    "  /* leading */ DELETE FROM items",
    "SELECT 'unterminated",
    "SELECT $tag$ never closed",
    "",
]


@pytest.mark.parametrize("query", WRITES_THROUGH_SQL_QUERY)
def test_sql_query_refuses_anything_but_one_read(pg_url: str, query: str) -> None:
    refusal = _refusal(lambda: _run(QUERY, _settings(pg_url), connection="main", query=query))
    assert refusal.code is RefusalCode.INVALID_ARGUMENT, refusal.reason
    assert pg_scalar(pg_url, "SELECT count(*) FROM items") == ROWS
    assert pg_scalar(pg_url, "SELECT to_regclass('planted')") is None
    assert pg_scalar(pg_url, "SELECT count(*) FROM items WHERE name <> 'item ' || id") == 0
    assert not Path("/tmp/synthorg-copy-planted").exists()


def _engine_read(url: str, sql: str) -> object:
    return postgres_read(
        url=url, name="main", sql=sql, parameters=None, max_rows=10, max_cell_chars=100,
        statement_timeout=1, connect_timeout=5,
    )  # fmt: skip


@pytest.mark.parametrize(
    "query",
    [
        "INSERT INTO items VALUES (100, 'x', 'y')",
        "WITH gone AS (DELETE FROM items RETURNING *) SELECT * FROM gone",
        "SET TRANSACTION READ WRITE",
        "COPY items TO PROGRAM 'touch /tmp/synthorg-copy-planted'",
        "SELECT sneaky()",
        "SELECT nextval('counter')",
        "SELECT 1; DROP TABLE items",
    ],
)
def test_the_database_itself_refuses_writes_past_the_static_check(pg_url: str, query: str) -> None:
    """The engine layer alone (no static check) still never writes."""
    with pytest.raises((ToolRefusedError, ToolFailedError)):
        _engine_read(pg_url, query)
    assert pg_scalar(pg_url, "SELECT count(*) FROM items") == ROWS
    assert pg_scalar(pg_url, "SELECT count(*) FROM trail") == 0
    assert pg_scalar(pg_url, "SELECT to_regclass('items') IS NOT NULL") is True
    assert not Path("/tmp/synthorg-copy-planted").exists()


def test_a_writing_function_is_refused_by_the_read_only_transaction(pg_url: str) -> None:
    refusal = _refusal(lambda: _run(QUERY, _settings(pg_url), connection="main",
                                    query="SELECT sneaky()"))  # fmt: skip
    assert refusal.code is RefusalCode.INVALID_ARGUMENT and "read-only" in refusal.reason
    assert pg_scalar(pg_url, "SELECT count(*) FROM trail") == 0


def test_pg_sleep_hits_the_statement_timeout(pg_url: str) -> None:
    outcome = _run(
        QUERY, _settings(pg_url, statement_timeout_seconds=0.2), connection="main",
        query="SELECT pg_sleep(30)",
    )  # fmt: skip
    assert outcome.timed_out is True and outcome.error_code == "STATEMENT_TIMEOUT"


def test_a_runaway_sqlite_query_is_interrupted(sqlite_path: Path) -> None:
    with pytest.raises(StatementTimeoutError):
        sqlite_read(
            path=str(sqlite_path), name="lite", parameters=None, max_rows=10,
            max_cell_chars=100, statement_timeout=0.2,
            sql="WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
            "SELECT count(*) FROM r",
        )  # fmt: skip


@pytest.mark.parametrize(
    "query",
    [
        "INSERT INTO items VALUES (100, 'x', 'y')",
        "DELETE FROM items",
        "DROP TABLE items",
        "ATTACH DATABASE '{planted}' AS planted",
        "PRAGMA writable_schema = ON",
        "SELECT 1; DELETE FROM items",
    ],
)
def test_sqlite_reads_cannot_write_even_without_the_static_check(
    sqlite_path: Path, query: str
) -> None:
    planted = sqlite_path.parent / "planted.db"
    with pytest.raises((ToolRefusedError, ToolFailedError)):
        sqlite_read(
            path=str(sqlite_path), name="lite", sql=query.format(planted=planted),
            parameters=None, max_rows=10, max_cell_chars=100, statement_timeout=1,
        )  # fmt: skip
    assert not planted.exists()
    outcome = _run(QUERY, _settings("postgresql://unused@127.0.0.1:1/x", sqlite_path),
                   connection="lite", query="SELECT count(*) FROM items")  # fmt: skip
    assert outcome.structured is not None and outcome.structured["rows"] == [[ROWS]]


# --- connections ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["nowhere", "private", "MAIN", "../main"])
def test_an_unknown_or_forbidden_connection_is_host_not_allowed(pg_url: str, name: str) -> None:
    refusal = _refusal(lambda: _run(QUERY, _settings(pg_url), connection=name, query="SELECT 1"))
    assert refusal.code is RefusalCode.HOST_NOT_ALLOWED
    assert refusal.reason.endswith("usable: main")  # the restricted one is never offered


def test_the_agent_named_on_a_connection_may_use_it(pg_url: str) -> None:
    outcome = QUERY.run(
        db_context(_settings(pg_url), agent_name="someone-else"),
        {"connection": "private", "query": "SELECT 1 AS one"},
    )
    assert outcome.structured is not None and outcome.structured["rows"] == [[1]]


def test_an_unreachable_database_fails_closed_without_the_password() -> None:
    url = f"postgresql://reader:{PASSWORD}@127.0.0.1:1/nothing"
    with pytest.raises(ToolFailedError) as caught:
        _run(QUERY, {"connections": {"gone": {"url": url}}}, connection="gone", query="SELECT 1")
    assert caught.value.code == "CONNECTION_FAILED" and PASSWORD not in caught.value.message


@pytest.mark.parametrize(
    "settings",
    [
        {"connections": {"x": {"url": "mysql://h/db"}}},
        {"connections": {"x": {"url": "sqlite:///relative.db"}}},
        {"connections": {"x": {"url": "postgresql://h/db", "typo": 1}}},
        {"connections": {"bad name": {"url": "postgresql://h/db"}}},
        {"max_rows": 0},
    ],
)
def test_a_broken_connection_config_fails_closed(settings: dict[str, Any]) -> None:
    with pytest.raises(ToolFailedError) as caught:
        _run(QUERY, settings, connection="x", query="SELECT 1")
    assert caught.value.code == "CONFIG_INVALID"


def test_an_overlong_query_is_limit_exceeded(pg_url: str) -> None:
    refusal = _refusal(
        lambda: _run(
            QUERY,
            _settings(pg_url, max_query_chars=20),
            connection="main",
            query="SELECT 1 AS " + "a" * 40,
        )
    )
    assert refusal.code is RefusalCode.LIMIT_EXCEEDED


def test_connection_passwords_are_collected_for_redaction() -> None:
    sections: dict[str, dict[str, Any]] = {
        "sql_query": {"connections": {"a": {"url": "postgresql://u:p%40ss-word-1@h/db"}}},
        "db_mutate": {"connections": {"b": {"url": "postgresql://u@h/db"}}},
        "http_request": {"auth_headers": {}},
    }
    assert set(connection_passwords(sections)) == {"p%40ss-word-1", "p@ss-word-1"}


def test_statements_are_split_on_code_never_on_text() -> None:
    sql = "SELECT ';', $$;$$, $x$ ; $x$, E'\\';', \"a;b\" -- ;\n FROM t /* ; /* ; */ */"
    assert len(split_statements(sql)) == 1
    assert len(split_statements("SELECT 1;; ;")) == 1
    assert len(split_statements("SELECT 1; SELECT 2")) == 2


# --- schema ----------------------------------------------------------------------


@pytest.mark.parametrize("connection", ["main", "lite"])
def test_schema_inspect_lists_tables_and_columns(
    pg_url: str, sqlite_path: Path, connection: str
) -> None:
    outcome = _run(SCHEMA, _settings(pg_url, sqlite_path), connection=connection)
    assert outcome.structured is not None
    tables = {t["name"]: t for t in outcome.structured["tables"]}
    assert [c["name"] for c in tables["items"]["columns"]] == ["id", "name", "note"]
    assert tables["items"]["columns"][1]["nullable"] is False
    one = _run(SCHEMA, _settings(pg_url, sqlite_path, max_tables=1), connection=connection)
    assert one.structured is not None and one.structured["truncated"] is True
    assert len(one.structured["tables"]) == 1


# --- writes ----------------------------------------------------------------------


def test_db_mutate_changes_rows_and_returns_what_it_changed(pg_url: str) -> None:
    outcome = _run(
        MUTATE, _settings(pg_url), connection="main",
        query="INSERT INTO trail (what) VALUES (%s), (%s) RETURNING what",
        parameters=["one", "two"],
    )  # fmt: skip
    assert outcome.structured is not None
    assert outcome.structured["row_count"] == 2
    assert outcome.structured["rows"] == [["one"], ["two"]]
    assert pg_scalar(pg_url, "SELECT count(*) FROM trail WHERE what IN ('one', 'two')") == 2
    pg_scalar(pg_url, "DELETE FROM trail")


def test_db_mutate_on_sqlite(pg_url: str, sqlite_path: Path) -> None:
    outcome = _run(
        MUTATE, _settings(pg_url, sqlite_path), connection="lite",
        query="UPDATE items SET note = ? WHERE id <= 3", parameters=["changed"],
    )  # fmt: skip
    assert outcome.structured is not None and outcome.structured["row_count"] == 3


@pytest.mark.parametrize(
    "query",
    [
        "DROP TABLE items",
        "CREATE TABLE planted (a int)",
        "TRUNCATE items",
        "SELECT * FROM items",
        "DELETE FROM trail; DROP TABLE items",
        "COPY items FROM PROGRAM 'id'",
        "WITH x AS (SELECT 1) SELECT * FROM x",
    ],
)
def test_db_mutate_refuses_schema_changes_and_reads(pg_url: str, query: str) -> None:
    refusal = _refusal(lambda: _run(MUTATE, _settings(pg_url), connection="main", query=query))
    assert refusal.code is RefusalCode.INVALID_ARGUMENT
    assert pg_scalar(pg_url, "SELECT count(*) FROM items") == ROWS
