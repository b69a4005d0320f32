"""A worker survives a restart of its Redis broker.

With kombu 5.7 and celery 5.7, a worker holding unacknowledged messages when Redis goes
away dies for good: the consumer closes the broken connection, closing its channel
restores the unacknowledged messages, and that needs a new Redis client built from the
connection the close has just cleared (``AttributeError: 'NoneType' object has no
attribute 'hostname'`` in ``kombu.transport.redis.Channel._connparams``), which escapes
as an "Unrecoverable error". Upstream: celery/kombu#970 (the same restore on a closed
connection) and celery/celery#10205 (a worker that does not recover from a broker
connection reset).

The same holds for acknowledging, after the reconnect, a message of the old connection
(a call that finished). Here those steps are skipped when their connection is gone: the
messages stay in Redis's unacknowledged set, where kombu restores them after the
visibility timeout (a redelivered call finds itself taken or finished and stops), and
the console does not depend on them anyway. The database says what must run (a queued call
is sent again by the dispatch sweep; a call the worker holds keeps running and is
recorded by it), so the worker reconnects and goes on.
"""

from __future__ import annotations

import functools
from typing import Any

import structlog

log = structlog.get_logger("synthorg.celery")
_applied: dict[str, bool] = {}


def _connection_gone(qos: Any) -> bool:
    transport = getattr(qos.channel, "connection", None)
    return getattr(transport, "client", None) is None


def _tolerant(name: str, original: Any) -> Any:
    """``original`` (a QoS method), logged and skipped when its channel's connection is
    gone: what it would have told Redis is left for the visibility timeout."""

    @functools.wraps(original)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _connection_gone(self):
            log.warning("broker_message_left_for_redelivery", step=name)
            if name == "restore_unacked":
                self._delivered.clear()
            return None
        try:
            return original(self, *args, **kwargs)
        except AttributeError as exc:  # the connection was cleared meanwhile
            if not _connection_gone(self):
                raise
            log.warning("broker_message_left_for_redelivery", step=name, error=str(exc))
            if name == "restore_unacked":
                self._delivered.clear()
            return None

    return method


def broker_repair_apply() -> None:
    """Make the Redis transport's acknowledgements, rejections and restores of messages
    from a connection that is gone a logged no-op instead of a dead worker (once per
    process): after a broker restart, calls that finish acknowledge messages of the
    old connection, and closing it restores its unacknowledged messages."""
    if _applied.get("qos"):
        return
    from kombu.transport import redis as redis_transport

    for name in ("restore_unacked", "ack", "reject"):
        setattr(redis_transport.QoS, name, _tolerant(name, getattr(redis_transport.QoS, name)))
    _applied["qos"] = True
