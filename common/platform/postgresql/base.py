"""Django's PostgreSQL backend, whose pool drops every dead connection at once.

psycopg_pool checks a connection as it hands it out (``CONN_HEALTH_CHECKS``) and, when
the check fails, pauses before taking the next one (1 s, then 2 s, 4 s...). After
PostgreSQL restarts, every idle connection of a pool is dead: a request met them one
pause at a time, its pool timeout ran out after two or three (503 ``database``), and a
node that had 20 idle connections answered 503 for some 15 s after the database was
back. Here the first failed check tests every idle connection of the pool at once
(no pause: each dead one is dropped and replaced in the background), so the request's
next try gets a live connection.

A busy pool is not an absent database. Every web request runs its database work in a
thread of its own: a burst of a hundred agents' calls asks a node's pool of twenty for a
hundred connections at once, and those queued past the pool timeout (3 s, chosen so an
outage answers 503 quickly) were answered 503 ``database`` while PostgreSQL was up and
every connection was at work. Here a request that times out while all the pool's
connections are lent out (or being made) and none failed to connect meanwhile waits on, up to
``busy_timeout`` (30 s); one that times out while the pool cannot connect is an outage.

A connection handed back a moment ago is lent again without the check's round trip
when nothing waits on its socket: a server that ends a connection (a restart, a
terminated backend, a crash) says so or closes it, and either makes the socket
readable, so such a connection still gets the whole check. Every call's hot path takes
a connection two or three times, and the check was an empty query each time.
"""

from __future__ import annotations

import select
from collections.abc import Callable
from time import monotonic
from typing import Any, ClassVar

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base

# How long a request waits for a connection while every one is at work, in seconds.
DEFAULT_BUSY_TIMEOUT = 30.0
# A connection handed back at most this long ago, with nothing to read on its socket, is
# lent again without a round trip to the server, in seconds.
FRESH_SECONDS = 2.0
# Where a pooled connection keeps when it was last handed back (monotonic seconds).
RETURNED_AT = "_synthorg_returned_at"


class Lending:
    """How the pool checks a connection it lends (the pool notes when one comes back)."""

    def __init__(self, fresh_seconds: float = FRESH_SECONDS) -> None:
        self.fresh_seconds = fresh_seconds
        self.pool: Any = None

    def check(self, connection: Any) -> None:
        from psycopg_pool import ConnectionPool

        if self._fresh_and_quiet(connection):
            return
        try:
            ConnectionPool.check_connection(connection)
        except Exception:
            # The server dropped this one: those idle beside it went with it.
            if self.pool is not None:
                self.pool.check()
            raise

    def _fresh_and_quiet(self, connection: Any) -> bool:
        from psycopg.pq import TransactionStatus

        returned = getattr(connection, RETURNED_AT, None)
        if returned is None or monotonic() - returned >= self.fresh_seconds:
            return False
        try:
            pgconn = connection.pgconn
            if pgconn.transaction_status != TransactionStatus.IDLE:
                return False
            poller = select.poll()
            poller.register(pgconn.socket, select.POLLIN | select.POLLPRI)
            # Readable means the server said something or closed it: check it whole.
            return not poller.poll(0)
        except Exception:  # closed or unusable: the whole check says how
            return False


def _busy_aware_pool_class() -> type[Any]:
    from psycopg_pool import ConnectionPool, PoolTimeout

    class BusyAwarePool(ConnectionPool[Any]):
        """Waits past its timeout while the database is busy rather than away."""

        def __init__(self, *args: Any, busy_timeout: float, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.busy_timeout = busy_timeout

        def putconn(self, conn: Any) -> None:
            # Noted here, not in a reset callback: with one, the pool hands every
            # returned connection to its worker thread instead of taking it back at once.
            setattr(conn, RETURNED_AT, monotonic())
            super().putconn(conn)

        def _connection_errors(self) -> int:
            return int(self.get_stats().get("connections_errors", 0))

        def _all_at_work(self) -> bool:
            stats = self.get_stats()
            return stats.get("pool_size", 0) > 0 and not stats.get("pool_available", 0)

        def getconn(self, timeout: float | None = None) -> Any:
            first = self.timeout if timeout is None else timeout
            give_up = monotonic() + max(self.busy_timeout, first)
            errors = self._connection_errors()
            try:
                return super().getconn(first)
            except PoolTimeout:
                # Away (a connection failed meanwhile, or the pool could not grow).
                if self._connection_errors() != errors or not self._all_at_work():
                    raise
            while True:
                left = give_up - monotonic()
                if left <= 0:
                    raise PoolTimeout(
                        f"every one of the pool's {self.max_size} connections stayed "
                        f"at work for {max(self.busy_timeout, first):.0f} s"
                    )
                try:
                    return super().getconn(min(left, first))
                except PoolTimeout:
                    if self._connection_errors() != errors:
                        raise

    return BusyAwarePool


class DatabaseWrapper(base.DatabaseWrapper):
    # Django's own, not in its type stubs.
    _connection_pools: ClassVar[dict[str, Any]]
    _configure_connection: Callable[[Any], Any]

    @property
    def pool(self) -> Any:
        pool_options = self.settings_dict["OPTIONS"].get("pool")
        checked = self.settings_dict["CONN_HEALTH_CHECKS"]
        if self.alias == NO_DB_ALIAS or not pool_options or not checked:
            return super().pool
        if self.alias not in self._connection_pools:
            # As Django builds it (django.db.backends.postgresql.base), but for the check.
            if self.settings_dict.get("CONN_MAX_AGE", 0) != 0:
                raise ImproperlyConfigured("Pooling doesn't support persistent connections.")
            from psycopg_pool import ConnectionPool

            options = {} if pool_options is True else dict(pool_options)
            busy_timeout = float(options.pop("busy_timeout", DEFAULT_BUSY_TIMEOUT))
            connect_kwargs = self.get_connection_params()
            connect_kwargs["autocommit"] = True  # Django sets its own mode after
            lending = Lending()
            pool: ConnectionPool[Any] = _busy_aware_pool_class()(
                busy_timeout=busy_timeout,
                kwargs=connect_kwargs,
                open=False,
                configure=self._configure_connection,
                check=lending.check,
                **options,
            )
            lending.pool = pool
            # The first of threads racing here wins, as in Django.
            self._connection_pools.setdefault(self.alias, pool)
        return self._connection_pools[self.alias]
