"""Live updates about invocations: each call's status messages on a channel of its own
(common.platform.status_messages), published after commit."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterable
from typing import Any

from common.platform.status_messages import Listener, listening, publish, publish_each
from tools_app.models import TERMINAL_STATUSES


def invocation_channel(invocation_id: Any) -> str:
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
    if body is not None and rendered_size(body) <= CARRIED_BODY_MAX_CHARS:
        message["invocation"] = body
    publish(invocation_channel(invocation_id), message, wait=status in TERMINAL_STATUSES)


def publish_invocations_status(invocation_ids: Iterable[Any], status: str) -> None:
    """``publish_invocation_status`` without a body for many calls at once, in one round
    trip, before the caller goes on."""
    message = {"type": "invocation.status", "status": status}
    publish_each([(invocation_channel(i), message) for i in invocation_ids])


def rendered_size(body: dict[str, Any]) -> int:
    """About how many characters an invocation's agent view takes, in its text parts."""
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


class InvocationWatch:
    """A subscription to one invocation's status messages."""

    def __init__(self, listener: Listener) -> None:
        self._listener = listener

    @property
    def broken(self) -> bool:
        """True once messages may have been missed: the caller checks the database instead."""
        return self._listener.broken

    async def until_terminal(self, timeout: float) -> dict[str, Any] | None:
        """The first terminal status message, or None after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            message = await self._listener.next(remaining)
            if message is None:
                return None
            if message.get("status") in TERMINAL_STATUSES:
                return message
        return None


@contextlib.asynccontextmanager
async def watch_invocation(invocation_id: Any) -> AsyncIterator[InvocationWatch | None]:
    """Subscribe to an invocation's status messages for the block (None: Redis is away).

    Subscribing before the invocation exists (its id chosen by the caller) means
    no status change can be missed, with no database read to close the gap.
    """
    async with listening(invocation_channel(invocation_id)) as listener:
        yield None if listener is None else InvocationWatch(listener)


async def wait_for_terminal(invocation_id: Any, *, timeout: float, current_status: Any) -> None:
    """Return when the invocation reaches a terminal status or `timeout` seconds pass.

    Subscribes first, then reads the status, so an update between the two is never
    missed; then sleeps on the call's status channel (no database polling). Without
    status messages (Redis is away, or went away meanwhile) it keeps waiting by reading
    the status once a second: a wait is never cut short by an outage.
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
