"""Withdraw the pending requests of a tool that can no longer run (an admin disabled it,
or an upstream MCP tool's definition is held for review).

Each request is settled as ``cancelled`` and its call ends ``cancelled`` with the
reason, which reaches the agent (a waiting call answers at once) and the
operators' inbox (the request leaves it live). Runs inside the caller's
transaction, so the tool is never disabled with requests still approvable.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from approvals_app.models import ApprovalRequest, ApprovalStatus
from approvals_app.services.settle import audit_settlement, close_request, refuse_invocation
from audit_app.record import Actor
from tools_app.models import InvocationStatus


def approvals_withdraw_for_tool(
    *, tool: str, actor: Actor, reason: str, code: str = "tool_disabled"
) -> int:
    """Withdraw every pending request for ``tool``; answers how many were withdrawn.

    ``code`` is the error code the withdrawn calls end with.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("withdrawing requests must run inside the caller's transaction")
    pending = (
        ApprovalRequest.objects.select_for_update(of=("self",))
        .select_related("invocation", "invocation__agent")
        .filter(status=ApprovalStatus.PENDING, invocation__tool=tool)
        .order_by("created_at")
    )
    now = timezone.now()
    withdrawn = 0
    for request in pending:
        moved = refuse_invocation(
            request.invocation,
            status=InvocationStatus.CANCELLED,
            code=code,
            message=reason,
        )
        if not moved:
            continue  # the call left pending_approval in between (cancelled by its agent)
        close_request(request, status=ApprovalStatus.CANCELLED, decided_by=actor.name, now=now)
        audit_settlement(
            request, kind="approval.withdrawn", actor=actor, outcome="withdrawn", reason=reason
        )
        withdrawn += 1
    return withdrawn
