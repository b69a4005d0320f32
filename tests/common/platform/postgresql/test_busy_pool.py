"""A busy pool waits; an absent database is an outage (common/platform/postgresql)."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest
from psycopg_pool import PoolTimeout

from common.platform.postgresql.base import _busy_aware_pool_class
from common.testing import free_port
from tests.common.platform.postgresql.server import conninfo

pytestmark = pytest.mark.integration


def _pool(conninfo: str, *, busy_timeout: float, max_size: int = 2) -> Any:
    pool = _busy_aware_pool_class()(
        conninfo,
        min_size=1,
        max_size=max_size,
        timeout=0.3,
        busy_timeout=busy_timeout,
        reconnect_timeout=1.0,
        open=False,
        kwargs={"autocommit": True, "connect_timeout": 2},
    )
    pool.open()
    return pool


def _release_later(pool: Any, connection: psycopg.Connection[Any], after: float) -> None:
    def give_back() -> None:
        time.sleep(after)
        pool.putconn(connection)

    threading.Thread(target=give_back, daemon=True).start()


def test_a_request_waits_while_every_connection_is_at_work() -> None:
    pool = _pool(conninfo(), busy_timeout=30)
    try:
        held = [pool.getconn(), pool.getconn()]
        _release_later(pool, held[0], after=1.5)  # five pool timeouts later
        got = pool.getconn()
        assert got is held[0]
        assert got.execute("SELECT 1").fetchone() == (1,)
        pool.putconn(got)
        pool.putconn(held[1])
    finally:
        pool.close()


def test_control_past_the_busy_timeout_it_is_refused() -> None:
    pool = _pool(conninfo(), busy_timeout=0.3)
    try:
        held = [pool.getconn(), pool.getconn()]
        _release_later(pool, held[0], after=1.5)
        with pytest.raises(PoolTimeout):
            pool.getconn()
        pool.putconn(held[1])
    finally:
        pool.close()


def test_an_absent_database_is_not_waited_for() -> None:
    """Nothing listens: the pool cannot connect, so the request fails at its own
    timeout (an outage: 503 at once) and never waits out the long busy timeout."""
    nowhere = f"postgresql://synthorg@127.0.0.1:{free_port()}/synthorg"
    pool = _pool(nowhere, busy_timeout=3600)
    outcome: list[BaseException | None] = []

    def ask() -> None:
        try:
            pool.putconn(pool.getconn())
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    asker = threading.Thread(target=ask, daemon=True)
    try:
        asker.start()
        asker.join(timeout=120)
        assert outcome, "still waiting: an absent database was taken for a busy one"
        assert isinstance(outcome[0], PoolTimeout)
    finally:
        pool.close(timeout=1)
