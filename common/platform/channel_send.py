"""Send channel-layer group messages from synchronous code, cheaply.

``async_to_sync(layer.group_send)`` starts an event loop per call, and the
Redis channel layer keeps its connections per event loop, so every message
would pay for a new loop and a new connection. Here one daemon thread per
process runs one loop for the life of the process (a forked child starts its
own), and every send is handed to it: the connection is made once.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import wait as wait_all
from typing import Any

import structlog
from channels.layers import get_channel_layer

log = structlog.get_logger("synthorg.live")

SEND_TIMEOUT_SECONDS = 5.0
# At exit, sends still in flight get this long to finish.
EXIT_FLUSH_SECONDS = 2.0


class _SenderLoop:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                _in_flight.clear()  # a forked child's copies of its parent's sends
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="channel-sender", daemon=True
                )
                thread.start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop

    def owned_here(self) -> bool:
        return self._loop is not None and self._pid == os.getpid()


_sender = _SenderLoop()


def group_send(group: str, message: dict[str, Any], *, wait: bool = True) -> bool:
    """Send ``message`` to ``group``; False (logged) when it could not be sent in time.

    Live messages are hints: whoever listens also reads the database, so a lost
    message delays a listener until its own timeout but never loses state. It
    works from any synchronous code, even a thread running a loop of its own:
    the send runs on the sender loop, never on the caller's. With ``wait=False``
    the caller goes on at once (True means handed over); a failure is logged.
    """
    layer = get_channel_layer()
    if layer is None:
        return False
    if not wait:
        bounded = asyncio.wait_for(layer.group_send(group, message), SEND_TIMEOUT_SECONDS)
        pending = asyncio.run_coroutine_threadsafe(bounded, _sender.loop())
        _in_flight.add(pending)
        pending.add_done_callback(lambda done: _settled(group, done))
        return True
    future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), _sender.loop())
    try:
        future.result(timeout=SEND_TIMEOUT_SECONDS)
    except FutureTimeout:
        future.cancel()
        log.warning("live_message_not_sent", group=group, reason="timed out")
        return False
    except Exception as exc:
        log.warning("live_message_not_sent", group=group, reason=repr(exc))
        return False
    return True


_in_flight: set[Future[Any]] = set()


def _settled(group: str, future: Future[Any]) -> None:
    _in_flight.discard(future)
    if future.cancelled():
        return
    exc = future.exception()
    if exc is not None:
        log.warning("live_message_not_sent", group=group, reason=repr(exc))


@atexit.register
def _flush_in_flight() -> None:
    """A process that exits right after a send without waiting still delivers it."""
    if _in_flight and _sender.owned_here():
        wait_all(list(_in_flight), timeout=EXIT_FLUSH_SECONDS)
