"""Database tools: ``sql_query``, ``schema_inspect`` (reads) and ``db_mutate`` (writes).

Every call names a connection from the tool's own settings (``tools.<tool>.
connections``, see ``database_config``); an agent never gives a URL or host. Reads
are checked statically (one statement, read keywords only, no side-effecting
functions) and then run where the database itself enforces reading: PostgreSQL in
a READ ONLY transaction through a server-side cursor, SQLite on a ``mode=ro``
handle with a read-only authorizer. Every statement has a timeout and every result
a row limit, with a truncation flag.

Writes are a separate tool with their own action type (``db:mutate``), safety
class (write) and connection list, so policies can route them to a human; schema
changes are refused by both (they are ``db:admin``).

They run on the worker, not in the database category's sandbox: that sandbox
has no network, and the only targets are the admin's named connections (see
``database_postgres``). A connection that cannot be reached fails closed. Each
statement runs in a child forked from the worker with a memory and CPU ceiling
and a wall-clock deadline (``database_confined``), so a query that asks for a
gigabyte or never ends costs the child, never the worker.

Settings (``tools.<tool>``; all optional): ``connections``, ``max_rows`` (1000),
``statement_timeout_seconds`` (10), ``connect_timeout_seconds`` (5),
``max_query_chars`` (20000), ``max_cell_chars`` (4000), ``memory_limit_mb`` (256),
``max_value_bytes`` (16 MiB: the largest string, blob or row SQLite may build),
``max_result_bytes`` (8 MiB of cells, then ``truncated``), ``process_grace_seconds``
(5: how long past the timeouts the child may live); ``schema_inspect`` also
``max_tables`` (200).
"""

from __future__ import annotations

import dataclasses
import math
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.database.config import (
    DatabaseConnection,
    DatabaseToolSettings,
    connection_for,
    database_settings,
)
from tools_app.builtin.database.confined import ChildLimits, run_confined
from tools_app.builtin.database.postgres import (
    CONNECTION_LOST,
    postgres_mutate,
    postgres_read,
    postgres_schema,
)
from tools_app.builtin.database.rows import (
    QueryMemoryExceededError,
    QueryResult,
    StatementTimeoutError,
)
from tools_app.builtin.database.schema import SCHEMA_INSPECT_CONTRACT, schema_tables
from tools_app.builtin.database.sql import check_mutation, check_read_query
from tools_app.builtin.database.sqlite import sqlite_mutate, sqlite_read, sqlite_schema
from tools_app.contracts import ToolContract

_CONNECTION_PROPERTY: Final = {
    "type": "string",
    "minLength": 1,
    "maxLength": 64,
    "description": "Name of a connection configured for this tool.",
}
_QUERY_INPUT: Final = {
    "type": "object",
    "properties": {
        "connection": _CONNECTION_PROPERTY,
        "query": {"type": "string", "minLength": 1, "maxLength": 1_000_000},
        "parameters": {
            "type": "array",
            "items": {"type": ["string", "number", "boolean", "null"]},
            "maxItems": 1000,
            "description": "Values bound to %s placeholders (PostgreSQL) or ? (SQLite).",
        },
    },
    "required": ["connection", "query"],
    "additionalProperties": False,
}
_ROWS_OUTPUT: Final = {
    "type": "object",
    "properties": {
        "connection": {"type": "string"},
        "columns": {"type": "array", "items": {"type": "string"}},
        "rows": {"type": "array", "items": {"type": "array"}},
        "row_count": {"type": "integer"},
        "truncated": {"type": "boolean"},
        "cells_truncated": {"type": "boolean"},
    },
    "required": ["connection", "columns", "rows", "row_count", "truncated"],
    "additionalProperties": False,
}
_COMMON_FAILURES: Final = (
    "HOST_NOT_ALLOWED: no connection of that name is configured for you.",
    "LIMIT_EXCEEDED: the query is longer than the configured maximum.",
    "CONNECTION_FAILED: the configured database cannot be reached; nothing ran.",
    "timed_out: the statement ran past the configured statement timeout.",
    "MEMORY_EXCEEDED: the statement needed more than the configured memory; nothing was returned.",
)

SQL_QUERY_CONTRACT: Final = ToolContract(
    name="sql_query",
    category=ToolCategory.DATABASE,
    action_type="db:query",
    safety_class=SafetyClass.READ,
    idempotent=True,
    summary="Run one read-only SQL query on a configured database connection.",
    description=(
        "Runs exactly one SELECT, WITH, VALUES or TABLE statement on the named connection "
        "in a read-only transaction with a statement timeout. Returns column names and "
        "rows (at most the configured row limit; `truncated` says there were more). "
        "Writes, schema changes, COPY, SET and several statements are refused."
    ),
    input_schema=_QUERY_INPUT,
    output_schema=_ROWS_OUTPUT,
    failure_modes=(
        "INVALID_ARGUMENT: more than one statement, or a statement that writes, locks, "
        "copies or changes settings.",
        *_COMMON_FAILURES,
    ),
)

DB_MUTATE_CONTRACT: Final = ToolContract(
    name="db_mutate",
    category=ToolCategory.DATABASE,
    action_type="db:mutate",
    safety_class=SafetyClass.WRITE,
    idempotency="required",
    cost_tier="medium",
    summary="Insert, update or delete rows with one SQL statement on a configured connection.",
    description=(
        "Runs exactly one INSERT, UPDATE, DELETE or MERGE (optionally with WITH) on the "
        "named connection in its own transaction, committed when it succeeds. Returns "
        "the number of rows affected and any RETURNING rows. Schema changes are refused."
    ),
    input_schema=_QUERY_INPUT,
    output_schema=_ROWS_OUTPUT,
    failure_modes=(
        "INVALID_ARGUMENT: more than one statement, a read, or a schema change.",
        *_COMMON_FAILURES,
    ),
)


def _checked_call(
    context: ToolContext, arguments: Mapping[str, Any]
) -> tuple[DatabaseToolSettings, str, DatabaseConnection, str, Sequence[Any] | None]:
    return checked_statement(context.settings, context.agent_name, arguments)


def checked_statement(
    tool_settings: Mapping[str, Any], agent_name: str, arguments: Mapping[str, Any]
) -> tuple[DatabaseToolSettings, str, DatabaseConnection, str, Sequence[Any] | None]:
    """The tool's settings, the named connection (if this agent may use it), the query
    and its parameters, checked against the tool's limits; refusals as a call gets them."""
    settings = database_settings(tool_settings)
    name = str(arguments.get("connection", ""))
    connection = connection_for(settings, name, agent_name)
    query = arguments.get("query")
    if not isinstance(query, str):
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "query must be a string")
    if len(query) > settings.max_query_chars:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"the query is {len(query)} characters; the limit is {settings.max_query_chars}",
        )
    parameters = arguments.get("parameters")
    if parameters is not None and not isinstance(parameters, list):
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "parameters must be a list")
    return settings, name, connection, query, parameters


def _outcome(result: QueryResult, name: str, started: float) -> ToolOutcome:
    return ToolOutcome(
        content=result.as_text(),
        structured=result.as_dict(name),
        truncated=result.truncated or result.cells_truncated,
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def _timed_out(settings: DatabaseToolSettings, started: float) -> ToolOutcome:
    return ToolOutcome(
        content=f"the statement ran past its timeout of {settings.statement_timeout_seconds}s "
        "and was cancelled by the database",
        is_error=True,
        error_code="STATEMENT_TIMEOUT",
        timed_out=True,
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def _memory_exceeded(settings: DatabaseToolSettings, started: float) -> ToolOutcome:
    return ToolOutcome(
        content=f"the statement needed more than its memory limit of {settings.memory_limit_mb} "
        "MiB and was stopped; ask for fewer or smaller values",
        is_error=True,
        error_code="MEMORY_EXCEEDED",
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def _child_limits(settings: DatabaseToolSettings) -> ChildLimits:
    wall = (
        settings.statement_timeout_seconds
        + settings.connect_timeout_seconds
        + settings.process_grace_seconds
    )
    memory = settings.memory_limit_mb * 1024 * 1024
    return ChildLimits(
        memory_bytes=memory,
        cpu_seconds=math.ceil(wall),
        wall_seconds=wall,
        max_report_bytes=memory,
    )


def confined_work(settings: DatabaseToolSettings, work: Callable[[], Any]) -> Any:
    """``work`` in a confined child; SQLite's own heap stops below the child's ceiling."""

    def bounded() -> Any:
        # Process-wide, so only ever set in the child: the worker's own SQLite is untouched.
        heap = settings.memory_limit_mb * 1024 * 1024 // 2
        with sqlite3.connect(":memory:") as handle:
            handle.execute(f"PRAGMA hard_heap_limit = {int(heap)}")
        return work()

    try:
        return run_confined(bounded, _child_limits(settings))
    except ToolFailedError as exc:
        if exc.code != CONNECTION_LOST:
            raise
        raise ToolFailedError(
            f"{exc.message}; a value larger than the memory limit of "
            f"{settings.memory_limit_mb} MiB (memory_limit_mb) ends the connection this way",
            code=exc.code,
        ) from None


def _run_statement(
    context: ToolContext,
    arguments: Mapping[str, Any],
    *,
    check: Callable[[str], Any],
    sqlite: Callable[..., Any],
    postgres: Callable[..., Any],
) -> ToolOutcome:
    """Check the connection and the text, then run it on the connection's engine."""
    settings, name, connection, query, parameters = _checked_call(context, arguments)
    check(query)
    started = time.monotonic()
    limits: dict[str, Any] = {
        "name": name,
        "sql": query,
        "parameters": parameters,
        "max_rows": settings.max_rows,
        "max_cell_chars": settings.max_cell_chars,
        "statement_timeout": settings.statement_timeout_seconds,
        "max_result_bytes": settings.max_result_bytes,
    }

    def work() -> dict[str, Any]:
        if connection.engine == "sqlite":
            found = sqlite(
                path=connection.sqlite_path, max_value_bytes=settings.max_value_bytes, **limits
            )
        else:
            found = postgres(
                url=connection.url, connect_timeout=settings.connect_timeout_seconds, **limits
            )
        return dataclasses.asdict(found)

    try:
        result = QueryResult(**confined_work(settings, work))
    except StatementTimeoutError:
        return _timed_out(settings, started)
    except QueryMemoryExceededError:
        return _memory_exceeded(settings, started)
    return _outcome(result, name, started)


class SqlQueryTool:
    """``sql_query``: one read on a named connection, enforced read-only by the database."""

    contract: ToolContract = SQL_QUERY_CONTRACT

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the connection and the text, then read with the configured limits."""
        return _run_statement(
            context, arguments, check=check_read_query, sqlite=sqlite_read, postgres=postgres_read
        )


class DbMutateTool:
    """``db_mutate``: one row change on a named connection, in its own transaction."""

    contract: ToolContract = DB_MUTATE_CONTRACT

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the connection and the text, then change rows and commit."""
        return _run_statement(
            context, arguments, check=check_mutation, sqlite=sqlite_mutate, postgres=postgres_mutate
        )


class SchemaInspectTool:
    """``schema_inspect``: the tables, views and columns a connection's role can see."""

    contract: ToolContract = SCHEMA_INSPECT_CONTRACT

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """List tables (optionally one schema or table) up to the configured maximum."""
        settings = database_settings(context.settings)
        name = str(arguments.get("connection", ""))
        connection = connection_for(settings, name, context.agent_name)
        schema, table = arguments.get("schema"), arguments.get("table")
        started = time.monotonic()

        def work() -> list[tuple[str, str, str, str, str, bool]]:
            if connection.engine == "sqlite":
                found = sqlite_schema(
                    path=connection.sqlite_path,
                    name=name,
                    table=table,
                    statement_timeout=settings.statement_timeout_seconds,
                )
                return found if schema in (None, "main") else []
            return postgres_schema(
                url=connection.url,
                name=name,
                schema=schema,
                table=table,
                statement_timeout=settings.statement_timeout_seconds,
                connect_timeout=settings.connect_timeout_seconds,
            )

        try:
            columns = [tuple(row) for row in confined_work(settings, work)]
        except StatementTimeoutError:
            return _timed_out(settings, started)
        except QueryMemoryExceededError:
            return _memory_exceeded(settings, started)
        tables, truncated = schema_tables(columns, settings.max_tables)
        text = "\n".join(
            f"{t['schema']}.{t['name']} ({t['kind']}): "
            + ", ".join(f"{c['name']} {c['type']}" for c in t["columns"])
            for t in tables
        )
        return ToolOutcome(
            content=text or "no tables visible",
            structured={"connection": name, "tables": tables, "truncated": truncated},
            truncated=truncated,
            duration_ms=int((time.monotonic() - started) * 1000),
        )


TOOLS: Final = (SqlQueryTool(), SchemaInspectTool(), DbMutateTool())
