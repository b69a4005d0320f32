"""Live updates for the operators' inbox, sent over the channel layer after commit.

The message names the request, its kind (an approval request or a promotion
request) and what happened. Where the publisher holds the request already (a
new request, a settlement), it renders the row once, as every operator sees it,
and sends the fragment with the message; an inbox whose person sees the row
differently (the agent's owner, an admin on an escalated request) reads the
request from the database and renders its own. The pending count is always read
by each inbox when the message arrives, so the socket never holds state the
database does not. Messages go out on the process's one long-lived sender loop
(common.platform.channel_send), never a new event loop and Redis connection per message.
"""

from __future__ import annotations

import functools
from typing import Any

import structlog
from django.db import transaction

from common.inbox import OPERATORS_GROUP, InboxKind, inbox_change_message
from common.platform.channel_send import group_send

log = structlog.get_logger("synthorg.approvals")


def publish_approval_change(
    request_id: Any, change: str, kind: str = InboxKind.APPROVAL, *, request: Any = None
) -> None:
    """Tell every connected inbox that request ``request_id`` (of ``kind``) changed.

    With ``request`` (an ApprovalRequest with its invocation and agent loaded),
    the row is rendered here once and carried in the message.
    """
    message = inbox_change_message(request_id, change, kind)
    if request is not None:
        from approvals_app.live import shared_row

        try:
            message.update(shared_row(request, change))
        except Exception:
            # Each inbox then renders the row from the database itself.
            log.exception("inbox_row_not_rendered", request=str(request_id))
    group_send(OPERATORS_GROUP, message)


def approval_change_on_commit(request_id: Any, change: str, *, request: Any = None) -> None:
    """Publish the change once the caller's transaction commits (nothing for a rollback)."""
    transaction.on_commit(
        functools.partial(
            publish_approval_change, request_id, change, InboxKind.APPROVAL, request=request
        )
    )
