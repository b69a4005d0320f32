"""Django's PostgreSQL backend, whose pool drops every dead connection at once.

psycopg_pool checks a connection as it hands it out (``CONN_HEALTH_CHECKS``) and, when
the check fails, pauses before taking the next one (1 s, then 2 s, 4 s...). After
PostgreSQL restarts, every idle connection of a pool is dead: a request met them one
pause at a time, its pool timeout ran out after two or three (503 ``database``), and a
node that had 20 idle connections answered 503 for some 15 s after the database was
back. Here the first failed check tests every idle connection of the pool at once
(no pause: each dead one is dropped and replaced in the background), so the request's
next try gets a live connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base


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

            options = {} if pool_options is True else pool_options
            connect_kwargs = self.get_connection_params()
            connect_kwargs["autocommit"] = True  # Django sets its own mode after
            pool: ConnectionPool[Any] | None = None

            def check(connection: Any) -> None:
                try:
                    ConnectionPool.check_connection(connection)
                except Exception:
                    # The server dropped this one: those idle beside it went with it.
                    if pool is not None:
                        pool.check()
                    raise

            pool = ConnectionPool(
                kwargs=connect_kwargs,
                open=False,
                configure=self._configure_connection,
                check=check,
                **options,
            )
            # The first of threads racing here wins, as in Django.
            self._connection_pools.setdefault(self.alias, pool)
        return self._connection_pools[self.alias]
