"""The operators' socket at /ws/approvals/: session auth, operators and admins only.

It holds no state: on connect it sends what the database says now, and on every
change event it reads the pending counts and sends the changed request's row,
as the publisher rendered it or, where its person sees the row differently,
rendered here from the database. The inbox page asks for its resync as a
difference (``resync=diff``, ``approvals_app.inbox_diff``): the socket waits for
the page's list of what it shows, and sends the whole inbox if none comes.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from urllib.parse import parse_qs

import structlog
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from approvals_app.inbox_diff import diff_frames, parse_have, parse_page
from approvals_app.live import (
    INBOX_VIEW,
    can_decide,
    change_html,
    change_row_html,
    counts_html,
    decider_scope,
    is_admin,
    resync_frames,
    shared_row_fits,
    upstream_held_html,
)
from common.inbox import OPERATORS_GROUP
from common.platform.outage import outage_part
from common.platform.redis import redis_client
from common.team_scope import NOWHERE, TeamScope

log = structlog.get_logger("synthorg.live")

# Close code sent before the handshake completes: the browser sees a refused upgrade (403).
REFUSED = 4403
# Live updates were lost (Redis restarted or is away): the page shows the connection as
# lost, reconnects and asks for what changed meanwhile. (An application may close with
# 1000 or 3000-4999 only; 4012 stands for 1012, "service restart".)
LIVE_LOST = 4012


async def _redis_run_id() -> str:
    """Redis's own id for its current run: a restart changes it (and forgets the groups
    of a Redis that keeps no data, silently)."""

    def read() -> str:
        return str(redis_client().info("server")["run_id"])

    return await asyncio.to_thread(read)


class ApprovalInboxConsumer(AsyncWebsocketConsumer):
    """Pushes new, changed and settled requests (approvals and promotions) and the count."""

    user: Any = None
    view: str = "count"
    is_admin: bool = False
    # The teams whose requests this person sees: a row or count of another team's is
    # never sent, though every inbox hears of every change.
    team_scope: TeamScope = NOWHERE
    awaiting_have: bool = False
    _full_later: asyncio.Task[None] | None = None
    _watch: asyncio.Task[None] | None = None
    _run_id: str = ""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """A channel layer that fails under the socket (Redis restarting or away) closes it
        as lost rather than as a server error: the page reconnects either way, and says
        why."""
        try:
            await super().__call__(scope, receive, send)
        except Exception as exc:
            if outage_part(exc) != "redis":
                raise
            log.warning("inbox_live_updates_lost", reason=str(exc)[:200])
            if self._watch is not None:
                self._watch.cancel()
            with contextlib.suppress(Exception):
                await send({"type": "websocket.close", "code": LIVE_LOST})

    async def connect(self) -> None:
        user = self.scope.get("user")
        if not await database_sync_to_async(can_decide)(user):
            await self.close(code=REFUSED)
            return
        self.user = user
        self.is_admin = await database_sync_to_async(is_admin)(user)
        self.team_scope = await database_sync_to_async(decider_scope)(user)
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        self.view = INBOX_VIEW if query.get("view") == [INBOX_VIEW] else "count"
        # Join before reading the state, so no change between the two is missed.
        await self.channel_layer.group_add(OPERATORS_GROUP, self.channel_name)
        self._run_id = await _redis_run_id()
        await self.accept()
        self._watch = asyncio.ensure_future(self._watch_live_updates())
        if self.view == INBOX_VIEW and query.get("resync") == ["diff"]:
            self.awaiting_have = True
            self._full_later = asyncio.ensure_future(self._resync_unless_told())
            return
        await self._resync_whole()

    async def _resync_whole(self) -> None:
        for frame in await database_sync_to_async(resync_frames)(self.user, self.view):
            await self.send(text_data=frame)

    async def _resync_unless_told(self) -> None:
        await asyncio.sleep(settings.SYNTHORG_INBOX_HAVE_WAIT_SECONDS)
        if self.awaiting_have:
            self.awaiting_have = False
            await self._resync_whole()

    async def _watch_live_updates(self) -> None:
        """Every few seconds: still in the group (joined again: a membership that expired
        or that a Redis restart forgot comes back), on the same Redis run. Otherwise
        changes may have been missed: the socket closes as lost, and the page reconnects
        and asks for what it is missing."""
        while True:
            await asyncio.sleep(settings.SYNTHORG_LIVE_CHECK_SECONDS)
            try:
                await self.channel_layer.group_add(OPERATORS_GROUP, self.channel_name)
                same_run = await _redis_run_id() == self._run_id
            except Exception as exc:  # any failure of the layer means updates were lost
                log.warning("inbox_live_updates_lost", reason=str(exc)[:200])
                same_run = False
            if not same_run:
                await self.close(code=LIVE_LOST)
                return

    async def disconnect(self, code: int) -> None:
        for task in (self._full_later, self._watch):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self.user is not None:
            # Redis may be what went away: the membership then expires on its own.
            with contextlib.suppress(Exception):
                await self.channel_layer.group_discard(OPERATORS_GROUP, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Decisions are POSTed, never sent over the socket. The one message read is the
        page's list of what it shows, once, when it asked for a difference; anything else
        is ignored."""
        if not self.awaiting_have:
            return
        self.awaiting_have = False
        if self._full_later is not None:
            self._full_later.cancel()
        have = parse_have(text_data) if text_data is not None else None
        if have is None:
            await self._resync_whole()
            return
        page = parse_page(text_data) if text_data is not None else None
        for frame in await database_sync_to_async(diff_frames)(self.user, have, page):
            await self.send(text_data=frame)

    async def approval_changed(self, event: dict[str, Any]) -> None:
        if "team_id" in event and not self.team_scope.admits(event["team_id"]):
            return  # another team's request: this person never hears of it
        shared = event.get("html")
        if shared is not None and shared_row_fits(event, self.user, self.is_admin, self.team_scope):
            # The publisher rendered the row once for every operator; only the counts are read.
            counts = await database_sync_to_async(counts_html)(self.view, self.team_scope)
            await self.send(text_data=counts + shared if self.view == INBOX_VIEW else counts)
            return
        html = await database_sync_to_async(change_html)(
            self.user, self.view, event["id"], event["change"], event.get("kind", "approval")
        )
        if html:
            await self.send(text_data=html)

    async def approvals_changed(self, event: dict[str, Any]) -> None:
        """Many requests changed at once (a decision on many): one frame with the counts
        read once and every row, shared where it fits this person; nothing when every
        change is another team's."""
        changes = [
            change
            for change in event.get("changes", [])
            if "team_id" not in change or self.team_scope.admits(change["team_id"])
        ]
        if not changes:
            return
        parts = [await database_sync_to_async(counts_html)(self.view, self.team_scope)]
        if self.view == INBOX_VIEW:
            for change in changes:
                shared = change.get("html")
                fits = shared_row_fits(change, self.user, self.is_admin, self.team_scope)
                if shared is not None and fits:
                    parts.append(shared)
                    continue
                parts.append(
                    await database_sync_to_async(change_row_html)(
                        self.user, change["id"], change["change"]
                    )
                )
        await self.send(text_data="".join(parts))

    async def upstream_held(self, event: dict[str, Any]) -> None:
        """An upstream tool was held or released: the inbox's notice is read again."""
        if self.view == INBOX_VIEW:
            await self.send(text_data=await database_sync_to_async(upstream_held_html)(self.user))
