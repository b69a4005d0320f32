"""Waiting for an MCP call's invocation to finish, telling the client how it stands.

The wait sleeps on the channel layer (no database polling between status
messages), wakes every `SYNTHORG_MCP_PROGRESS_INTERVAL_SECONDS` to send a progress
notification (when the client asked for them with a progressToken) and to re-read
the status, and ends early when the client goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
from asgiref.sync import sync_to_async
from django.conf import settings

from tools_app.events import InvocationWatch, watch_invocation
from tools_app.models import TERMINAL_STATUSES, Invocation, InvocationStatus

log = structlog.get_logger(__name__)

# Reports (progress so far in seconds, total seconds or None, message) to the client.
ProgressSink = Callable[[float, float | None, str], Awaitable[None]]


@dataclass
class McpExchange:
    """One HTTP request to the gateway, as its handler sees it beyond the SDK."""

    disconnected: asyncio.Event = field(default_factory=asyncio.Event)
    arrived_at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class _Standing:
    status: str
    approval_id: uuid.UUID | None = None


def _standing(invocation_id: uuid.UUID) -> _Standing:
    status, approval_id = (
        Invocation.objects.filter(id=invocation_id).values_list("status", "approval__id").get()
    )
    return _Standing(status=status, approval_id=approval_id)


def _progress_message(
    tool: str, invocation_id: uuid.UUID, standing: _Standing, waited: float
) -> str:
    if standing.status == InvocationStatus.PENDING_APPROVAL:
        request = f", approval request {standing.approval_id}" if standing.approval_id else ""
        return (
            f"{tool} awaits a person's approval (invocation {invocation_id}{request}); "
            f"waited {int(waited)} s"
        )
    return f"{tool} (invocation {invocation_id}) is {standing.status}"


async def _sleep(
    watch: InvocationWatch | None, seconds: float, exchange: McpExchange
) -> dict[str, Any] | None:
    """The terminal status message, or None when the client went away or `seconds` passed."""
    sleeper = asyncio.ensure_future(
        watch.until_terminal(seconds) if watch is not None else asyncio.sleep(seconds)
    )
    gone = asyncio.ensure_future(exchange.disconnected.wait())
    try:
        await asyncio.wait({sleeper, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sleeper, gone):
            task.cancel()
        for task in (sleeper, gone):
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if sleeper.cancelled() or sleeper.exception() is not None:
        return None
    message = sleeper.result()
    return message if isinstance(message, dict) else None


async def wait_for_outcome(
    invocation: Invocation,
    *,
    approval_wait: float,
    exchange: McpExchange,
    progress: ProgressSink | None,
    watch: InvocationWatch | None = None,
) -> dict[str, Any] | None:
    """Return once the invocation is terminal, the waits run out or the client went away;
    with the terminal status message when one ended the wait.

    `watch`, when given, was subscribed to this invocation before it was submitted,
    so its status as submitted is current; otherwise one is opened here and the
    status read after subscribing. A call waiting for a person is waited for at most
    `approval_wait` seconds; a queued or running one, at most the worker's hard time
    limit (above every sandbox timeout).
    """
    if invocation.terminal:
        return None
    if watch is None:
        async with watch_invocation(invocation.id) as own:
            standing = await sync_to_async(_standing)(invocation.id)
            return await _wait(invocation, standing, own, approval_wait, exchange, progress)
    standing = _Standing(invocation.status)
    if standing.status == InvocationStatus.PENDING_APPROVAL and progress is not None:
        standing = await sync_to_async(_standing)(invocation.id)  # for the approval's id
    return await _wait(invocation, standing, watch, approval_wait, exchange, progress)


async def _wait(
    invocation: Invocation,
    standing: _Standing,
    watch: InvocationWatch | None,
    approval_wait: float,
    exchange: McpExchange,
    progress: ProgressSink | None,
) -> dict[str, Any] | None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    approval_deadline = started + approval_wait
    run_deadline: float | None = None
    interval = settings.SYNTHORG_MCP_PROGRESS_INTERVAL_SECONDS
    while standing.status not in TERMINAL_STATUSES and not exchange.disconnected.is_set():
        now = loop.time()
        pending = standing.status == InvocationStatus.PENDING_APPROVAL
        if pending:
            deadline = approval_deadline
        else:
            run_deadline = run_deadline or now + settings.CELERY_TASK_TIME_LIMIT
            deadline = run_deadline
        if now >= deadline:
            return None
        if progress is not None:
            message = _progress_message(invocation.tool, invocation.id, standing, now - started)
            total = approval_wait if pending else None
            await _report(progress, round(now - started, 3), total, message)
        ended = await _sleep(watch, min(interval, deadline - now), exchange)
        if ended is not None:
            return ended
        standing = await sync_to_async(_standing)(invocation.id)
    return None


async def _report(progress: ProgressSink, done: float, total: float | None, message: str) -> None:
    try:
        await progress(done, total, message)
    except Exception:  # a progress note that cannot be sent must not end the wait
        log.info("mcp_progress_not_sent", exc_info=True)
