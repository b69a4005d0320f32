"""Live updates about invocations, sent over the channel layer after commit."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import structlog
from channels.layers import get_channel_layer
from redis.exceptions import RedisError

from common.platform.channel_send import group_send
from tools_app.models import TERMINAL_STATUSES

log = structlog.get_logger("synthorg.live")


def invocation_group(invocation_id: Any) -> str:
    return f"invocation.{invocation_id}"


# A terminal message carries the agent's view of the call when it is at most this
# large, so a waiting request answers without reading it back from the database.
CARRIED_BODY_MAX_CHARS = 64 * 1024


def publish_invocation_status(
    invocation_id: Any, status: str, body: dict[str, Any] | None = None
) -> None:
    """Tell whoever waits on this invocation that its status changed.

    ``body`` is the invocation as the agent API renders it, read from the
    state this status committed; it travels only when it is small. A terminal
    status is sent before the caller goes on (someone may be waiting for it
    now); any other is sent in the background.
    """
    message: dict[str, Any] = {"type": "invocation.status", "status": status}
    if body is not None and _rendered_size(body) <= CARRIED_BODY_MAX_CHARS:
        message["invocation"] = body
    group_send(invocation_group(invocation_id), message, wait=status in TERMINAL_STATUSES)


def _rendered_size(body: dict[str, Any]) -> int:
    result = body.get("result") or {}
    return (
        len(result.get("content") or "")
        + len(str(result.get("structured") or ""))
        + len(str((body.get("error") or {}).get("message") or ""))
    )


def carried_body(message: dict[str, Any] | None) -> dict[str, Any] | None:
    """The invocation a terminal status message carried, if it carried one."""
    if message is None:
        return None
    body = message.get("invocation")
    return body if isinstance(body, dict) else None


# Group departures still running (held so they are not collected half-way).
_leaving: set[asyncio.Future[None]] = set()


class InvocationWatch:
    """A subscription to one invocation's status messages."""

    def __init__(self, layer: Any, channel: str) -> None:
        self._layer = layer
        self._channel = channel
        # True once the channel layer failed: the caller then checks the database instead.
        self.broken = False

    async def until_terminal(self, timeout: float) -> dict[str, Any] | None:
        """The first terminal status message, or None after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                message = await asyncio.wait_for(self._layer.receive(self._channel), remaining)
            except TimeoutError:
                return None
            except (RedisError, OSError) as exc:
                # The channel layer broke, not the call: the waiter answers what the
                # database says now (the agent keeps the id and can ask again).
                log.warning("invocation_wait_interrupted", channel=self._channel, reason=repr(exc))
                self.broken = True
                return None
            if message.get("status") in TERMINAL_STATUSES:
                return dict(message)
        return None


def _left(leaving: asyncio.Future[None]) -> None:
    _leaving.discard(leaving)
    if not leaving.cancelled() and leaving.exception() is not None:
        log.warning("invocation_watch_not_left", reason=repr(leaving.exception()))


@contextlib.asynccontextmanager
async def watch_invocation(invocation_id: Any) -> AsyncIterator[InvocationWatch | None]:
    """Subscribe to an invocation's status messages for the block (None: no channel layer).

    Subscribing before the invocation exists (its id chosen by the caller) means
    no status change can be missed, with no database read to close the gap.
    """
    layer = get_channel_layer()
    if layer is None:
        yield None
        return
    channel = await layer.new_channel()
    group = invocation_group(invocation_id)
    try:
        await layer.group_add(group, channel)
    except (RedisError, OSError) as exc:
        # No live updates: the caller answers from the database without waiting.
        log.warning("invocation_watch_unavailable", group=group, reason=repr(exc))
        yield None
        return
    try:
        yield InvocationWatch(layer, channel)
    finally:
        # Left in the background: the answer need not wait for it (and a
        # membership that is never removed expires with the group).
        leaving = asyncio.ensure_future(layer.group_discard(group, channel))
        _leaving.add(leaving)
        leaving.add_done_callback(_left)


async def wait_for_terminal(invocation_id: Any, *, timeout: float, current_status: Any) -> None:
    """Return when the invocation reaches a terminal status or `timeout` seconds pass.

    Subscribes first, then reads the status, so an update between the two is never
    missed; then sleeps on the channel layer (no database polling). Without a channel
    layer (Redis is away, or went away meanwhile) it keeps waiting by reading the status
    once a second: a wait is never cut short by an outage.
    """
    if timeout <= 0:
        return
    deadline = time.monotonic() + timeout
    async with watch_invocation(invocation_id) as watch:
        if watch is not None:
            if await current_status() in TERMINAL_STATUSES:
                return
            await watch.until_terminal(timeout)
            if not watch.broken:
                return
    while (remaining := deadline - time.monotonic()) > 0:
        if await current_status() in TERMINAL_STATUSES:
            return
        await asyncio.sleep(min(POLL_SECONDS, remaining))


# How often a wait without live updates reads the status.
POLL_SECONDS = 1.0
