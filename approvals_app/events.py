"""Live updates for the operators' inbox, sent over the channel layer after commit.

The message names the request and what happened; each connected inbox reads the
request from the database and renders it for its own person, so the socket never
holds state the database does not.
"""

from __future__ import annotations

import functools
from typing import Any, Final

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

OPERATORS_GROUP: Final = "operators"


class ApprovalChange:
    """What happened to a request, as the inbox shows it."""

    NEW = "new"
    UPDATED = "updated"
    SETTLED = "settled"


def publish_approval_change(request_id: Any, change: str) -> None:
    """Tell every connected inbox that request ``request_id`` changed."""
    layer = get_channel_layer()
    if layer is None:
        return
    async_to_sync(layer.group_send)(
        OPERATORS_GROUP, {"type": "approval.changed", "id": str(request_id), "change": change}
    )


def approval_change_on_commit(request_id: Any, change: str) -> None:
    """Publish the change once the caller's transaction commits (nothing for a rollback)."""
    transaction.on_commit(functools.partial(publish_approval_change, request_id, change))
