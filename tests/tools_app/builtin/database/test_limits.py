"""Database tools keep a query's memory and time out of the process that runs them.

Each attack runs through the tool as the worker runs it (the statement in a
forked, confined child) and checks the calling process's peak memory, next to a
control: a normal query with the same settings returns its rows.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from common.testing import wait_until
from tests.tools_app.builtin.database.test_support import ROWS, db_context, pg_url, sqlite_path
from tests.tools_app.sandbox.proc import reset_rss_high_water, rss_high_water_kib
from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolOutcome, ToolRefusedError
from tools_app.builtin.database.confined import ChildLimits, run_confined
from tools_app.builtin.database.rows import StatementTimeoutError
from tools_app.builtin.database.tools import DbMutateTool, SqlQueryTool

__all__ = ["pg_url", "sqlite_path"]

QUERY, MUTATE = SqlQueryTool(), DbMutateTool()
MIB = 1024 * 1024
# How far the calling process's peak memory may rise during one refused call: the
# attacks below ask for 300 MB to 1 GB, so a leak into this process shows plainly.
RSS_GROWTH_CEILING_KIB = 64 * 1024
HUGE_ROWS = (
    "WITH RECURSIVE r(n, s) AS (SELECT 1, randomblob(1000000) "
    "UNION ALL SELECT n + 1, s || randomblob(1000000) FROM r WHERE n < 2000) "
    "SELECT n, length(s) FROM r"
)


def _settings(lite: Path | None = None, pg: str | None = None, **extra: Any) -> dict[str, Any]:
    connections: dict[str, Any] = {}
    if lite is not None:
        connections["lite"] = {"url": f"sqlite:///{lite}"}
    if pg is not None:
        connections["main"] = {"url": pg}
    return {"connections": connections, "max_rows": 10, "statement_timeout_seconds": 2, **extra}


def _query(settings: dict[str, Any], connection: str, query: str) -> ToolOutcome:
    outcome: ToolOutcome = QUERY.run(
        db_context(settings), {"connection": connection, "query": query}
    )
    return outcome


def _bounded(call: Any) -> Any:
    """Run ``call`` and fail when it raised this process's peak memory noticeably."""
    reset_rss_high_water()
    before = rss_high_water_kib()
    try:
        return call()
    finally:
        assert rss_high_water_kib() - before < RSS_GROWTH_CEILING_KIB


def test_control_a_normal_query_returns_rows_through_the_confined_child(
    sqlite_path: Path,
) -> None:
    outcome = _bounded(lambda: _query(_settings(sqlite_path), "lite", "SELECT count(*) FROM items"))
    assert outcome.structured is not None and outcome.structured["rows"] == [[ROWS]]
    assert not outcome.is_error


@pytest.mark.parametrize(
    "query", ["SELECT randomblob(1000000000)", "SELECT zeroblob(1000000000)", HUGE_ROWS]
)
def test_a_gigabyte_sqlite_value_is_refused_at_the_value_limit(
    sqlite_path: Path, query: str
) -> None:
    settings = _settings(sqlite_path, max_value_bytes=4 * MIB)
    with pytest.raises(ToolRefusedError) as refused:
        _bounded(lambda: _query(settings, "lite", query))
    assert refused.value.code is RefusalCode.LIMIT_EXCEEDED
    assert "max_value_bytes" in refused.value.reason and str(4 * MIB) in refused.value.reason


@pytest.mark.parametrize(
    "query",
    [
        "SELECT randomblob(900000000)",
        "SELECT zeroblob(900000000)",
        # Many wide columns: each under the value limit, together far over memory.
        "SELECT " + ", ".join(f"randomblob(30000000) AS c{i}" for i in range(40)),
    ],
)
def test_the_memory_ceiling_holds_when_the_value_limit_is_lifted(
    sqlite_path: Path, query: str
) -> None:
    settings = _settings(sqlite_path, max_value_bytes=1_000_000_000, memory_limit_mb=96)
    outcome = _bounded(lambda: _query(settings, "lite", query))
    assert outcome.is_error and outcome.error_code == "MEMORY_EXCEEDED"
    assert "96 MiB" in outcome.content
    control = _bounded(lambda: _query(settings, "lite", "SELECT length(randomblob(1000000))"))
    assert control.structured is not None and control.structured["rows"] == [[1000000]]


def test_a_never_ending_sqlite_query_times_out(sqlite_path: Path) -> None:
    settings = _settings(sqlite_path, statement_timeout_seconds=0.5)
    outcome = _query(
        settings,
        "lite",
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
    )
    assert outcome.timed_out and outcome.error_code == "STATEMENT_TIMEOUT"


def test_many_wide_rows_stop_at_the_result_byte_limit(sqlite_path: Path) -> None:
    settings = _settings(sqlite_path, max_rows=1000, max_cell_chars=100_000, max_result_bytes=4096)
    outcome = _bounded(
        lambda: _query(
            settings,
            "lite",
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 500) "
            "SELECT n, hex(randomblob(1000)) FROM r",
        )
    )
    found = outcome.structured
    assert found is not None and found["truncated"] is True
    assert 0 < len(found["rows"]) < 5  # 2000 characters a row against a 4096 budget
    control = _query(settings, "lite", "SELECT id FROM items")
    assert control.structured is not None and len(control.structured["rows"]) == ROWS


def test_a_huge_postgres_value_never_reaches_the_worker(pg_url: str) -> None:
    settings = _settings(pg=pg_url, memory_limit_mb=64, statement_timeout_seconds=30)
    with pytest.raises(ToolFailedError) as failed:
        _bounded(lambda: _query(settings, "main", "SELECT repeat('x', 150000000)"))
    assert failed.value.code == "CONNECTION_LOST" and "64 MiB" in failed.value.message
    control = _query(settings, "main", "SELECT length(repeat('x', 1000000))")
    assert control.structured is not None and control.structured["rows"] == [[1000000]]


def test_a_mutation_over_the_value_limit_changes_nothing(sqlite_path: Path) -> None:
    settings = _settings(sqlite_path, max_value_bytes=4 * MIB)
    context = db_context(settings)
    with pytest.raises(ToolRefusedError):
        MUTATE.run(
            context,
            {"connection": "lite", "query": "UPDATE items SET note = randomblob(100000000)"},
        )
    after = _query(settings, "lite", "SELECT max(length(note)) FROM items")
    assert after.structured is not None and after.structured["rows"] == [[50]]
    control = MUTATE.run(
        context, {"connection": "lite", "query": "UPDATE items SET note = 'ok' WHERE id = 1"}
    )
    assert control.structured is not None and control.structured["row_count"] == 1


def test_a_child_past_its_wall_clock_is_killed() -> None:
    limits = ChildLimits(memory_bytes=64 * MIB, cpu_seconds=30, wall_seconds=0.5,
                         max_report_bytes=MIB)  # fmt: skip
    # Left alone the child would sleep, then report success: only the kill raises.
    with pytest.raises(StatementTimeoutError):
        run_confined(lambda: time.sleep(60), limits)
    assert run_confined(lambda: {"ok": [1, 2]}, limits) == {"ok": [1, 2]}


CHILD_OF_A_KILLED_WORKER = """
import os, sys, time
sys.path.insert(0, {root!r})
from tools_app.builtin.database.confined import ChildLimits, run_confined

def work():
    with open({pid_file!r}, "w") as handle:
        handle.write(str(os.getpid()))
    time.sleep(120)

run_confined(work, ChildLimits(memory_bytes=64 << 20, cpu_seconds=200, wall_seconds=200,
                               max_report_bytes=1 << 20))
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_the_statement_child_dies_with_its_worker(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = CHILD_OF_A_KILLED_WORKER.format(
        root=str(Path(__file__).resolve().parents[4]), pid_file=str(pid_file)
    )
    worker = subprocess.Popen([sys.executable, "-c", script])
    try:
        wait_until(lambda: pid_file.exists() and pid_file.read_text() != "", timeout=60,
                   what="the statement child to start")  # fmt: skip
        child = int(pid_file.read_text())
        assert not _gone(child)  # control: it runs while its worker lives
        worker.kill()
        worker.wait()
        wait_until(lambda: _gone(child), timeout=30, what="the orphaned child to be killed")
    finally:
        worker.kill()
        worker.wait()
