"""Shared steps of every settlement: move the invocation, record the audit row, push.

Callers hold the request's row lock inside their transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from approvals_app.events import approval_change_on_commit
from approvals_app.models import ApprovalRequest, ApprovalStatus
from audit_app.record import Actor, AuditEntry, audit_record
from common.config.notifications import NotificationEvent
from common.inbox import ApprovalChange
from notifications_app.services import notifications_queue
from tools_app.models import Invocation, InvocationStatus
from tools_app.services.invocation_admission import agent_line_advance, agent_line_lock
from tools_app.services.invocation_dispatch import invocation_settled
from tools_app.services.invocation_state import invocation_transition


def release_invocation(invocation: Invocation) -> bool:
    """pending_approval → queued: it joins its agent's line and starts when its turn
    comes (at once when a slot is free), sent to its queue on commit."""
    agent_line_lock(invocation.agent_id)
    moved = invocation_transition(
        invocation_id=invocation.id,
        from_statuses=[InvocationStatus.PENDING_APPROVAL],
        to_status=InvocationStatus.QUEUED,
        held=True,
    )
    if not moved:
        return False
    agent_line_advance(agent=invocation.agent, locked=True)
    return True


def refuse_invocation(invocation: Invocation, *, status: str, code: str, message: str) -> bool:
    """pending_approval → a terminal status with the reason the agent reads."""
    from django.utils import timezone

    moved = invocation_transition(
        invocation_id=invocation.id,
        from_statuses=[InvocationStatus.PENDING_APPROVAL],
        to_status=status,
        finished_at=timezone.now(),
        is_error=True,
        error_code=code,
        error_message=message,
    )
    if moved:
        # A person's refusal or an expiry ends the call without it running: no trust evidence.
        invocation_settled(invocation=invocation, status=status, evidence=False)
    return moved


def close_request(
    request: ApprovalRequest, *, status: str, decided_by: str, now: datetime, **fields: object
) -> None:
    """Write the request's final state (it is locked by the caller) and push on commit."""
    request.status = status
    request.decided_by = decided_by[:300]
    request.decided_at = now
    for name, value in fields.items():
        setattr(request, name, value)
    request.save(update_fields=["status", "decided_by", "decided_at", "updated_at", *fields.keys()])
    approval_change_on_commit(request.id, ApprovalChange.SETTLED, request=request)
    notifications_queue(request, NotificationEvent.DECIDED)


def close_requests(
    requests: Sequence[ApprovalRequest], *, status: str, now: datetime, **fields: object
) -> None:
    """``close_request`` for many locked requests, each with its ``decided_by`` already
    set: those alike are written in one statement."""
    alike: dict[tuple[str, tuple[object, ...]], list[ApprovalRequest]] = {}
    for request in requests:
        request.status = status
        request.decided_by = request.decided_by[:300]
        request.decided_at = now
        request.updated_at = now
        for name, value in fields.items():
            setattr(request, name, value)
        key = (request.decided_by, tuple(getattr(request, n) for n in sorted(fields)))
        alike.setdefault(key, []).append(request)
    for group in alike.values():
        first = group[0]
        ApprovalRequest.objects.filter(id__in=[r.id for r in group]).update(
            status=status,
            decided_by=first.decided_by,
            decided_at=now,
            updated_at=now,
            **{name: getattr(first, name) for name in fields},
        )
    for request in requests:
        approval_change_on_commit(request.id, ApprovalChange.SETTLED, request=request)
        notifications_queue(request, NotificationEvent.DECIDED)


def audit_settlement(
    request: ApprovalRequest,
    *,
    kind: str,
    actor: Actor,
    outcome: str,
    reason: str = "",
    data: dict[str, object] | None = None,
) -> None:
    """The audit row of one settlement, in the caller's transaction."""
    status = Invocation.objects.values_list("status", flat=True).get(id=request.invocation.id)
    audit_record(
        **settlement_entry(
            request,
            kind=kind,
            actor=actor,
            outcome=outcome,
            status=status,
            reason=reason,
            data=data,
        )
    )


def settlement_entry(
    request: ApprovalRequest,
    *,
    kind: str,
    actor: Actor,
    outcome: str,
    status: str,
    reason: str = "",
    data: dict[str, object] | None = None,
) -> AuditEntry:
    """The audit record of one settlement (``audit_record``'s arguments); ``status``:
    the invocation's status once the settlement is written."""
    invocation = request.invocation
    return {
        "kind": kind,
        "actor": actor,
        "agent": invocation.agent,
        "invocation_id": invocation.id,
        "tool": invocation.tool,
        "category": invocation.category,
        "action_type": invocation.action_type,
        "arguments_hash": request.arguments_hash,
        "outcome": outcome,
        "status": status,
        "reason": reason,
        "rule": request.rule,
        "data": {
            "approval": str(request.id),
            "risk_tier": request.risk_tier,
            "required_approvals": request.required_approvals,
            "approvals": request.approvals,
            **(data or {}),
        },
    }


PENDING = ApprovalStatus.PENDING
