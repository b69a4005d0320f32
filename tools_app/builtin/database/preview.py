"""A ``db_mutate`` counted before it is approved: the rows it would change, in a
transaction rolled back, under the tool's own checks and limits (see ``tools``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tools_app.builtin.database.rows import QueryMemoryExceededError, StatementTimeoutError
from tools_app.builtin.database.sql import check_mutation
from tools_app.builtin.database.sqlite import sqlite_mutate
from tools_app.builtin.database.tools import checked_statement, confined_work


class MutationNotCountedError(Exception):
    """Why a change's rows are not counted before it is approved."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def mutation_count(
    tool_settings: Mapping[str, Any],
    agent_name: str,
    arguments: Mapping[str, Any],
    *,
    timeout_seconds: float,
) -> int:
    """How many rows ``db_mutate`` with ``arguments`` would change now, counted by running
    it under the tool's own checks and limits in a transaction that is rolled back.

    Only on SQLite, where a rollback undoes everything the statement did. On PostgreSQL a
    sequence advanced by an INSERT, or a trigger reaching outside the database, would
    stay: the statement is not run before approval (``MutationNotCountedError``).
    Refusals and failures of the call itself raise as they would when it runs."""
    settings, name, connection, query, parameters = checked_statement(
        tool_settings, agent_name, arguments
    )
    check_mutation(query)
    if connection.engine != "sqlite":
        raise MutationNotCountedError(
            "on PostgreSQL a rolled-back statement can still advance sequences and run "
            "triggers that act outside the database, so it is not run before approval"
        )
    timeout = min(settings.statement_timeout_seconds, timeout_seconds)
    # The child's whole life is bounded by the preview's time, not the call's.
    bounded = settings.model_copy(
        update={
            "statement_timeout_seconds": timeout,
            "connect_timeout_seconds": min(settings.connect_timeout_seconds, timeout),
            "process_grace_seconds": min(settings.process_grace_seconds, 1.0),
        }
    )

    def work() -> int:
        found = sqlite_mutate(
            path=connection.sqlite_path,
            name=name,
            sql=query,
            parameters=parameters,
            max_rows=1,
            max_cell_chars=bounded.max_cell_chars,
            statement_timeout=timeout,
            max_value_bytes=bounded.max_value_bytes,
            max_result_bytes=bounded.max_result_bytes,
            commit=False,
        )
        return found.row_count or 0

    try:
        return int(confined_work(bounded, work))
    except StatementTimeoutError:
        raise MutationNotCountedError(f"counting took longer than {timeout:g}s") from None
    except QueryMemoryExceededError:
        raise MutationNotCountedError(
            f"counting needed more than {settings.memory_limit_mb} MiB"
        ) from None
