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

A decision on many requests publishes its changes together (``changes_batched``): each
still only once its own transaction has committed, but a few messages carry them all,
so every inbox reads its counts a few times, not once per request.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

import structlog
from django.db import transaction

from common.inbox import OPERATORS_GROUP, InboxKind, inbox_change_message
from common.platform.channel_send import group_send

log = structlog.get_logger("synthorg.approvals")

# Changes of one batch per message: a settled row is about a kilobyte, and an inbox's
# socket sends each message as one frame.
BATCH_ROWS: Final = 100
_batch: ContextVar[list[dict[str, Any]] | None] = ContextVar("approval_changes", default=None)


def _change_message(request_id: Any, change: str, kind: str, request: Any) -> dict[str, Any]:
    message = inbox_change_message(request_id, change, kind)
    if request is not None:
        from approvals_app.live import shared_row

        try:
            message.update(shared_row(request, change))
        except Exception:
            # Each inbox then renders the row from the database itself.
            log.exception("inbox_row_not_rendered", request=str(request_id))
    return message


def publish_approval_change(
    request_id: Any, change: str, kind: str = InboxKind.APPROVAL, *, request: Any = None
) -> None:
    """Tell every connected inbox that request ``request_id`` (of ``kind``) changed.

    With ``request`` (an ApprovalRequest with its invocation and agent loaded),
    the row is rendered here once and carried in the message.
    """
    group_send(OPERATORS_GROUP, _change_message(request_id, change, kind, request))


def publish_approval_changes(changes: list[dict[str, Any]]) -> None:
    """Tell every connected inbox about ``changes`` (change messages), a batch at a time."""
    for start in range(0, len(changes), BATCH_ROWS):
        batch = changes[start : start + BATCH_ROWS]
        group_send(OPERATORS_GROUP, {"type": "approvals.changed", "changes": batch})


@contextmanager
def changes_batched() -> Iterator[None]:
    """Inside the block, the changes each committed transaction publishes are kept, and
    sent together when the block ends (a rolled-back one publishes nothing, as ever)."""
    kept: list[dict[str, Any]] = []
    token = _batch.set(kept)
    try:
        yield
    finally:
        _batch.reset(token)
        publish_approval_changes(kept)


def _keep(kept: list[dict[str, Any]], request_id: Any, change: str, request: Any) -> None:
    kept.append(_change_message(request_id, change, InboxKind.APPROVAL, request))


def approval_change_on_commit(request_id: Any, change: str, *, request: Any = None) -> None:
    """Publish the change once the caller's transaction commits (nothing for a rollback);
    inside ``changes_batched``, with the rest of the batch."""
    kept = _batch.get()
    if kept is not None:
        transaction.on_commit(functools.partial(_keep, kept, request_id, change, request))
        return
    transaction.on_commit(
        functools.partial(
            publish_approval_change, request_id, change, InboxKind.APPROVAL, request=request
        )
    )
