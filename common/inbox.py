"""The operators' inbox as a protocol: its group, the kinds of request and changes it shows.

Apps below approvals (trust's promotions, tools' upstream review) tell the inbox about a
change through these, after commit; approvals_app renders rows and owns the sockets.
"""

from __future__ import annotations

import functools
from typing import Any, Final

from django.db import transaction

from common.platform.channel_send import group_send

OPERATORS_GROUP: Final = "operators"


class InboxKind:
    """The kinds of request the inbox holds."""

    APPROVAL = "approval"
    PROMOTION = "promotion"


class ApprovalChange:
    """What happened to a request, as the inbox shows it."""

    NEW = "new"
    UPDATED = "updated"
    SETTLED = "settled"


def inbox_change_message(request_id: Any, change: str, kind: str) -> dict[str, Any]:
    """The message every inbox gets when request ``request_id`` (of ``kind``) changed."""
    return {"type": "approval.changed", "id": str(request_id), "change": change, "kind": kind}


def promotion_change_on_commit(promotion_id: Any, change: str) -> None:
    """Publish a promotion request's change once the caller's transaction commits."""
    message = inbox_change_message(promotion_id, change, InboxKind.PROMOTION)
    transaction.on_commit(functools.partial(group_send, OPERATORS_GROUP, message))


def upstream_held_on_commit() -> None:
    """Tell every inbox, after commit, that the set of held upstream MCP tools changed."""
    transaction.on_commit(functools.partial(group_send, OPERATORS_GROUP, {"type": "upstream.held"}))
