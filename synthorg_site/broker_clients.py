"""One Redis client per broker channel, instead of one per message.

kombu's Redis transport (5.7) builds a new ``redis.Redis`` for each command it sends
outside its polling loop: every task a web node sends, and each delivery and
acknowledgement a worker records in its unacknowledged set. Each build fills the
client's table of some 170 response callbacks, about a sixth of the CPU of sending a
task. redis-py clients may be shared between threads (each command takes a connection
from the pool and gives it back), so each channel keeps one, built on the channel's
current pool: when the channel drops its pools (closed, or in a forked child) the next
command builds a client on the new one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_applied: dict[str, bool] = {}
_CLIENT = "_synthorg_shared_client"


def channel_client(channel: Any) -> Any:
    """The channel's shared client, built anew when the channel's pool changed."""
    pool = channel.pool  # made on first use, as kombu makes it
    client = channel.__dict__.get(_CLIENT)
    if client is None or client.connection_pool is not pool:
        client = channel._create_client()
        channel.__dict__[_CLIENT] = client
    return client


@contextmanager
def _conn_or_acquire(self: Any, client: Any = None) -> Iterator[Any]:
    yield client if client else channel_client(self)


def broker_clients_apply() -> None:
    """Give kombu's Redis channels their shared client (once per process)."""
    if _applied.get("clients"):
        return
    from kombu.transport import redis as redis_transport

    redis_transport.Channel.conn_or_acquire = _conn_or_acquire  # type: ignore[method-assign]
    _applied["clients"] = True
