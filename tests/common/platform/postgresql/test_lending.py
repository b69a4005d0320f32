"""A pool lends a connection handed back a moment ago without a round trip, unless
its server has ended it (common/platform/postgresql.Lending)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from common.platform.postgresql.base import Lending, _busy_aware_pool_class
from tests.common.platform.postgresql.server import conninfo

pytestmark = pytest.mark.integration


class _CountedChecks:
    """Counts the whole checks (the empty query) the pool makes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        whole = ConnectionPool.check_connection

        def counted(connection: Any) -> None:
            self.count += 1
            whole(connection)

        monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted))


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> _CountedChecks:
    return _CountedChecks(monkeypatch)


def _pool(lending: Lending) -> Any:
    pool = _busy_aware_pool_class()(
        conninfo(),
        min_size=1,
        max_size=1,
        timeout=5,
        busy_timeout=5,
        open=False,
        check=lending.check,
        kwargs={"autocommit": True, "connect_timeout": 5},
    )
    lending.pool = pool
    pool.open(wait=True)
    return pool


@pytest.fixture
def lent() -> Iterator[tuple[Any, Lending]]:
    lending = Lending(fresh_seconds=60)
    pool = _pool(lending)
    try:
        yield pool, lending
    finally:
        pool.close(timeout=5)


def _backend_pid(connection: psycopg.Connection[Any]) -> int:
    row = connection.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


def test_control_a_connection_handed_back_a_moment_ago_is_lent_without_a_round_trip(
    lent: tuple[Any, Lending], checks: _CountedChecks
) -> None:
    pool, _ = lent
    first = pool.getconn()
    pid = _backend_pid(first)
    pool.putconn(first)
    checks.count = 0  # its first loan (made, never handed back) was checked whole
    again = pool.getconn()
    try:
        assert again is first
        assert checks.count == 0, "a connection just handed back was checked with a query"
        assert _backend_pid(again) == pid
    finally:
        pool.putconn(again)


def test_a_connection_whose_backend_was_ended_meanwhile_is_never_lent(
    lent: tuple[Any, Lending], checks: _CountedChecks
) -> None:
    """The attack: the server ends the connection between its return and its next
    loan (as a restart or an administrator does). The socket says so, the whole check
    runs, and the request gets a working connection."""
    pool, _ = lent
    first = pool.getconn()
    pid = _backend_pid(first)
    pool.putconn(first)
    checks.count = 0
    with psycopg.connect(conninfo(), autocommit=True) as admin:
        ended = admin.execute("SELECT pg_terminate_backend(%s, 5000)", [pid]).fetchone()
        assert ended == (True,)
    got = pool.getconn()
    try:
        assert checks.count >= 1, "an ended connection was lent without the whole check"
        assert got.execute("SELECT 1").fetchone() == (1,)
        assert _backend_pid(got) != pid
    finally:
        pool.putconn(got)


def test_a_connection_idle_past_the_fresh_time_gets_the_whole_check(
    checks: _CountedChecks,
) -> None:
    lending = Lending(fresh_seconds=0)
    pool = _pool(lending)
    try:
        pool.putconn(pool.getconn())
        checks.count = 0
        got = pool.getconn()
        assert checks.count >= 1
        pool.putconn(got)
    finally:
        pool.close(timeout=5)


def test_a_connection_never_handed_back_gets_the_whole_check(checks: _CountedChecks) -> None:
    lending = Lending(fresh_seconds=60)
    pool = _pool(lending)
    try:
        got = pool.getconn()  # new, never returned: nothing says it is fresh
        assert checks.count >= 1
        pool.putconn(got)
    finally:
        pool.close(timeout=5)
