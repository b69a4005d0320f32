"""The operators' socket at /ws/approvals/: session auth, operators and admins only.

It holds no state: on connect it sends what the database says now, and on every
change event it renders the changed request for its own person.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from approvals_app.events import OPERATORS_GROUP
from approvals_app.live import INBOX_VIEW, can_decide, change_html, resync_html

# Close code sent before the handshake completes: the browser sees a refused upgrade (403).
REFUSED = 4403


class ApprovalInboxConsumer(AsyncWebsocketConsumer):
    """Pushes new, changed and settled requests and the pending count as htmx swaps."""

    user: Any = None
    view: str = "count"

    async def connect(self) -> None:
        user = self.scope.get("user")
        if not await database_sync_to_async(can_decide)(user):
            await self.close(code=REFUSED)
            return
        self.user = user
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        self.view = INBOX_VIEW if query.get("view") == [INBOX_VIEW] else "count"
        # Join before reading the state, so no change between the two is missed.
        await self.channel_layer.group_add(OPERATORS_GROUP, self.channel_name)
        await self.accept()
        await self.send(text_data=await database_sync_to_async(resync_html)(user, self.view))

    async def disconnect(self, code: int) -> None:
        if self.user is not None:
            await self.channel_layer.group_discard(OPERATORS_GROUP, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Decisions are POSTed, never sent over the socket; anything sent here is ignored."""

    async def approval_changed(self, event: dict[str, Any]) -> None:
        html = await database_sync_to_async(change_html)(
            self.user, self.view, event["id"], event["change"]
        )
        await self.send(text_data=html)
