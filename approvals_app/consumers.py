"""The operators' socket at /ws/approvals/: session auth, operators and admins only.

It holds no state: on connect it sends what the database says now, and on every
change event it reads the pending count and sends the changed request's row,
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

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from approvals_app.inbox_diff import diff_frames, parse_have
from approvals_app.live import (
    INBOX_VIEW,
    can_decide,
    change_html,
    is_admin,
    pending_count_html,
    resync_frames,
    shared_row_fits,
    upstream_held_html,
)
from common.inbox import OPERATORS_GROUP

# Close code sent before the handshake completes: the browser sees a refused upgrade (403).
REFUSED = 4403


class ApprovalInboxConsumer(AsyncWebsocketConsumer):
    """Pushes new, changed and settled requests (approvals and promotions) and the count."""

    user: Any = None
    view: str = "count"
    is_admin: bool = False
    awaiting_have: bool = False
    _full_later: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if not await database_sync_to_async(can_decide)(user):
            await self.close(code=REFUSED)
            return
        self.user = user
        self.is_admin = await database_sync_to_async(is_admin)(user)
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        self.view = INBOX_VIEW if query.get("view") == [INBOX_VIEW] else "count"
        # Join before reading the state, so no change between the two is missed.
        await self.channel_layer.group_add(OPERATORS_GROUP, self.channel_name)
        await self.accept()
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

    async def disconnect(self, code: int) -> None:
        if self._full_later is not None:
            self._full_later.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._full_later
        if self.user is not None:
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
        for frame in await database_sync_to_async(diff_frames)(self.user, have):
            await self.send(text_data=frame)

    async def approval_changed(self, event: dict[str, Any]) -> None:
        shared = event.get("html")
        if shared is not None and shared_row_fits(event, self.user, self.is_admin):
            # The publisher rendered the row once for every operator; only the count is read.
            count = await database_sync_to_async(pending_count_html)()
            await self.send(text_data=count + shared if self.view == INBOX_VIEW else count)
            return
        html = await database_sync_to_async(change_html)(
            self.user, self.view, event["id"], event["change"], event.get("kind", "approval")
        )
        await self.send(text_data=html)

    async def upstream_held(self, event: dict[str, Any]) -> None:
        """An upstream tool was held or released: the inbox's notice is read again."""
        if self.view == INBOX_VIEW:
            await self.send(text_data=await database_sync_to_async(upstream_held_html)(self.user))
