"""Waiting for an MCP call's invocation to finish, telling the client how it stands.

The wait sleeps on the channel layer (no database polling between status
messages), wakes every `SYNTHORG_MCP_PROGRESS_INTERVAL_SECONDS` to send a progress
notification (when the client asked for them with a progressToken) and to re-read
the status, and ends early when the client goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class _Standing:
    status: str
    approval_id: uuid.UUID | None


def _standing(invocation_id: uuid.UUID) -> _Standing:
    status, approval_id = (
        Invocation.objects.filter(id=invocation_id).values_list("status", "approval__id").get()
    )
    return _Standing(status=status, approval_id=approval_id)


def _load(invocation_id: uuid.UUID) -> Invocation:
    return Invocation.objects.select_related("approval").get(id=invocation_id)


def _progress_message(invocation: Invocation, standing: _Standing, waited: float) -> str:
    if standing.status == InvocationStatus.PENDING_APPROVAL:
        request = f", approval request {standing.approval_id}" if standing.approval_id else ""
        return (
            f"{invocation.tool} awaits a person's approval (invocation {invocation.id}{request}); "
            f"waited {int(waited)} s"
        )
    return f"{invocation.tool} (invocation {invocation.id}) is {standing.status}"


async def _sleep(watch: InvocationWatch | None, seconds: float, exchange: McpExchange) -> None:
    """Until a terminal status message, the client going away, or `seconds` pass."""
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


async def wait_for_outcome(
    invocation: Invocation,
    *,
    approval_wait: float,
    exchange: McpExchange,
    progress: ProgressSink | None,
) -> Invocation:
    """The invocation once terminal, or as it stands when the waits run out or the
    client went away.

    A call waiting for a person is waited for at most `approval_wait` seconds; a
    queued or running one, at most the worker's hard time limit (above every
    sandbox timeout).
    """
    if invocation.terminal:
        return invocation
    loop = asyncio.get_running_loop()
    started = loop.time()
    approval_deadline = started + approval_wait
    run_deadline: float | None = None
    interval = settings.SYNTHORG_MCP_PROGRESS_INTERVAL_SECONDS
    async with watch_invocation(invocation.id) as watch:
        standing = await sync_to_async(_standing)(invocation.id)
        while standing.status not in TERMINAL_STATUSES and not exchange.disconnected.is_set():
            now = loop.time()
            if standing.status == InvocationStatus.PENDING_APPROVAL:
                deadline = approval_deadline
            else:
                run_deadline = run_deadline or now + settings.CELERY_TASK_TIME_LIMIT
                deadline = run_deadline
            if now >= deadline:
                break
            if progress is not None:
                pending = standing.status == InvocationStatus.PENDING_APPROVAL
                total = approval_wait if pending else None
                message = _progress_message(invocation, standing, now - started)
                await _report(progress, round(now - started, 3), total, message)
            await _sleep(watch, min(interval, deadline - now), exchange)
            standing = await sync_to_async(_standing)(invocation.id)
    return await sync_to_async(_load)(invocation.id)


async def _report(progress: ProgressSink, done: float, total: float | None, message: str) -> None:
    try:
        await progress(done, total, message)
    except Exception:  # a progress note that cannot be sent must not end the wait
        log.info("mcp_progress_not_sent", exc_info=True)
