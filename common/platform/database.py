"""The database as a worker meets it: connections given back while a call waits, and
work that waits out an outage instead of failing a call that ran."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TypeVar

import structlog
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connections,
)

log = structlog.get_logger("synthorg.database")

T = TypeVar("T")

# Errors that say the database is away (restarting, unreachable, out of connections),
# not that the statement was wrong.
OUTAGE_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError)
# How long a worker keeps a result it cannot record yet, and its pauses between tries.
OUTAGE_PATIENCE_SECONDS = 900.0
_PAUSES = (0.5, 1.0, 2.0, 5.0, 10.0)


def database_connections_release() -> None:
    """Give back this thread's database connections (to the pool, where there is one)
    while it waits on something else; the next query takes one again."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            with contextlib.suppress(DatabaseError):
                connection.close()


def until_database_answers(
    work: Callable[[], T], *, what: str, patience: float = OUTAGE_PATIENCE_SECONDS
) -> T:
    """``work()``, tried again while the database is away (each try from a fresh
    connection); the last error is raised once ``patience`` seconds have passed.

    ``work`` must be safe to repeat: a transaction that failed was rolled back whole.
    """
    deadline = time.monotonic() + patience
    tries = 0
    while True:
        try:
            return work()
        except OUTAGE_ERRORS as exc:
            pause = _PAUSES[min(tries, len(_PAUSES) - 1)]
            if time.monotonic() + pause > deadline:
                raise
            log.warning("database_unavailable", during=what, error=str(exc)[:300], retry_in=pause)
            tries += 1
            _drop_broken_connections()
            time.sleep(pause)


def _drop_broken_connections() -> None:
    database_connections_release()
    with contextlib.suppress(DatabaseError):
        close_old_connections()
