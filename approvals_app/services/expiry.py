"""Time-driven settlements: expiry, escalation, and an operator's cancel.

A request whose time ran out is expired and its call never runs; only a low or
medium request whose config says ``on_expiry: approve`` is approved by timing
out, and a high or critical one never is, whatever its stored setting says.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from approvals_app.events import approval_change_on_commit
from approvals_app.models import ApprovalRequest, ApprovalStatus, RiskTier
from approvals_app.services.settle import (
    audit_settlement,
    close_request,
    refuse_invocation,
    release_invocation,
)
from audit_app.record import Actor
from common.config.notifications import NotificationEvent
from common.errors import ConflictError
from common.inbox import ApprovalChange
from common.settings_config import synthorg_config
from notifications_app.services import notifications_queue
from tools_app.models import InvocationStatus

NEVER_APPROVED_BY_TIMEOUT = frozenset({RiskTier.HIGH, RiskTier.CRITICAL})
SWEEP_BATCH = 500


def settle_expiry(request: ApprovalRequest, now: datetime) -> None:
    """Expire (or, for a low/medium request configured so, approve) a locked pending request."""
    invocation = request.invocation
    actor = Actor.system("approval expiry")
    approve = request.on_expiry == "approve" and request.risk_tier not in NEVER_APPROVED_BY_TIMEOUT
    if approve and release_invocation(invocation):
        close_request(request, status=ApprovalStatus.APPROVED, decided_by="timeout", now=now)
        audit_settlement(
            request,
            kind="approval.approved_on_expiry",
            actor=actor,
            outcome="approve",
            reason=f"no decision before {request.expires_at.isoformat()}; "
            f"{request.risk_tier} requests of this rule are approved on expiry",
        )
        return
    waited = int((request.expires_at - request.created_at).total_seconds())
    refuse_invocation(
        invocation,
        status=InvocationStatus.EXPIRED,
        code="approval_expired",
        message=f"no operator decided within {waited}s, so the call did not run; "
        "call again to ask again",
    )
    close_request(request, status=ApprovalStatus.EXPIRED, decided_by="timeout", now=now)
    audit_settlement(
        request,
        kind="approval.expired",
        actor=actor,
        outcome="expired",
        reason=f"no decision within {waited}s",
    )


@transaction.atomic
def approval_expire(*, request_id: uuid.UUID | str, now: datetime | None = None) -> bool:
    """Settle one request whose time ran out; False when it was not pending or not due."""
    now = now or timezone.now()
    request = (
        ApprovalRequest.objects.select_for_update(of=("self",), skip_locked=True)
        .select_related("invocation", "invocation__agent")
        .filter(id=request_id, status=ApprovalStatus.PENDING, expires_at__lte=now)
        .first()
    )
    if request is None:
        return False
    settle_expiry(request, now)
    return True


def approvals_expire_due(*, now: datetime | None = None) -> int:
    """The expiry sweep: settle every due request (each in its own transaction)."""
    now = now or timezone.now()
    due = list(
        ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING, expires_at__lte=now)
        .order_by("expires_at")
        .values_list("id", flat=True)[:SWEEP_BATCH]
    )
    return sum(approval_expire(request_id=request_id, now=now) for request_id in due)


@transaction.atomic
def approval_escalate(*, request_id: uuid.UUID | str, now: datetime | None = None) -> bool:
    """Flag one long-pending request to admins (compare-and-set: once only)."""
    now = now or timezone.now()
    flagged = ApprovalRequest.objects.filter(
        id=request_id, status=ApprovalStatus.PENDING, escalated_at__isnull=True
    ).update(escalated_at=now, updated_at=now)
    if not flagged:
        return False
    request = ApprovalRequest.objects.select_related("invocation", "invocation__agent").get(
        id=request_id
    )
    waited = int((now - request.created_at).total_seconds())
    audit_settlement(
        request,
        kind="approval.escalated",
        actor=Actor.system("approval escalation"),
        outcome="escalated",
        reason=f"pending for {waited}s",
    )
    approval_change_on_commit(request.id, ApprovalChange.UPDATED)
    notifications_queue(request, NotificationEvent.ESCALATED)
    return True


def approvals_escalate_due(*, now: datetime | None = None) -> int:
    """The escalation sweep: flag requests pending longer than ``escalate_after_seconds``."""
    now = now or timezone.now()
    after = timedelta(seconds=synthorg_config().approval.escalate_after_seconds)
    due = list(
        ApprovalRequest.objects.filter(
            status=ApprovalStatus.PENDING, escalated_at__isnull=True, created_at__lte=now - after
        ).values_list("id", flat=True)[:SWEEP_BATCH]
    )
    return sum(approval_escalate(request_id=request_id, now=now) for request_id in due)


@transaction.atomic
def approval_cancel(*, request: ApprovalRequest | Any, actor: Actor, reason: str) -> None:
    """Withdraw a pending request: the call is cancelled and never runs."""
    request_id = request.id if isinstance(request, ApprovalRequest) else request
    locked = (
        ApprovalRequest.objects.select_for_update(of=("self",))
        .select_related("invocation", "invocation__agent")
        .filter(id=request_id)
        .first()
    )
    if locked is None or locked.status != ApprovalStatus.PENDING:
        status = locked.status if locked else "missing"
        raise ConflictError(f"only a pending request can be cancelled (it is {status})")
    now = timezone.now()
    refuse_invocation(
        locked.invocation,
        status=InvocationStatus.CANCELLED,
        code="cancelled",
        message=f"cancelled by {actor.name}: {reason}" if reason else f"cancelled by {actor.name}",
    )
    close_request(locked, status=ApprovalStatus.CANCELLED, decided_by=actor.name, now=now)
    audit_settlement(
        locked, kind="approval.cancelled", actor=actor, outcome="cancelled", reason=reason
    )
