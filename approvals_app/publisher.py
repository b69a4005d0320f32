"""One long-lived sender per process for the inbox's channel-layer messages.

``async_to_sync(layer.group_send)`` starts an event loop for every call, and the
Redis channel layer keeps its connections per loop, so each message paid for a
new loop and a new Redis connection. Here one daemon thread per process runs one
loop for the life of the process (a forked child starts its own) and every send
is handed to it, so the connection is made once. It works from any synchronous
code, including a thread that runs an event loop of its own.

Live messages are hints: every inbox reads the database on (re)connect, so a
message that could not be sent delays a screen, never loses state. A failure is
logged and never raised into the caller, whose transaction has already committed.
"""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Final

import structlog
from channels.layers import get_channel_layer

log = structlog.get_logger("synthorg.approvals")

SEND_TIMEOUT_SECONDS: Final = 5.0


class _SenderLoop:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, name="inbox-publisher", daemon=True
                ).start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop


_sender = _SenderLoop()


def group_send(group: str, message: dict[str, Any]) -> bool:
    """Send ``message`` to ``group`` on the process's sender loop; False (logged) on failure."""
    layer = get_channel_layer()
    if layer is None:
        return False
    future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), _sender.loop())
    try:
        future.result(timeout=SEND_TIMEOUT_SECONDS)
    except FutureTimeout:
        future.cancel()
        log.warning("inbox_message_not_sent", group=group, reason="timed out")
        return False
    except Exception as exc:
        log.warning("inbox_message_not_sent", group=group, reason=repr(exc))
        return False
    return True
