"""promotion_decide: a person approves or denies a promotion request, once.

Only operators and admins decide; the agent's owner may not approve its own
agent's promotion. The request row is locked and moved out of ``pending`` by
compare-and-set, so of two racing decisions exactly one wins and the other
gets a conflict naming who decided. The operators' inbox is told after commit.
An approval applies the promotion to the agent's trust state
in the same transaction, with a ``TrustChange`` naming the person and reason.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit_app.record import Actor, audit_record
from common.errors import ConflictError, ForbiddenError, InvalidArgumentError, NotFoundError
from common.inbox import ApprovalChange, promotion_change_on_commit
from common.roles import ROLES_THAT_DECIDE, has_any_role
from common.team_scope import DECIDE
from trust_app.models import PromotionRequest, PromotionStatus
from trust_app.selectors.teams import person_scope
from trust_app.selectors.trust import state_of, trust_strategy
from trust_app.services.trust import locked_state, record_change, state_save
from trust_app.strategies import LevelChange, apply_change

DECISIONS = {"approve": PromotionStatus.APPROVED, "deny": PromotionStatus.DENIED}


@transaction.atomic
def promotion_decide(
    *,
    request: PromotionRequest,
    person: Any,
    decision: str,
    reason: str,
    now: datetime | None = None,
) -> PromotionRequest:
    """Approve or deny ``request``; 409 when it was already decided or its track moved."""
    if not has_any_role(person, ROLES_THAT_DECIDE):
        raise ForbiddenError("only operators and admins decide promotions")
    status = DECISIONS.get(decision)
    if status is None:
        raise InvalidArgumentError("decision: must be 'approve' or 'deny'")
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidArgumentError("reason: say why", details={"field": "reason"})
    now = now or timezone.now()
    locked = PromotionRequest.objects.select_for_update().select_related("agent").get(pk=request.pk)
    if not person_scope(person, DECIDE).admits(locked.agent.team_id):
        raise NotFoundError(f"no promotion request {request.pk} among your teams' requests")
    if locked.status != PromotionStatus.PENDING:
        who = f" by {locked.decided_by_name}" if locked.decided_by_name else ""
        raise ConflictError(
            f"this promotion request was already {locked.status}{who}",
            details={"status": locked.status, "decided_by": locked.decided_by_name or None},
        )
    agent = locked.agent
    if status is PromotionStatus.APPROVED and agent.owner_id == person.pk:
        raise ForbiddenError("the agent's owner may not approve its own agent's promotion")
    taken = PromotionRequest.objects.filter(pk=locked.pk, status=PromotionStatus.PENDING).update(
        status=status,
        decided_at=now,
        decided_by=person,
        decided_by_name=person.get_username(),
        decision_reason=reason.strip(),
    )
    if taken != 1:
        raise ConflictError("this promotion request was decided by someone else")
    promotion_change_on_commit(locked.pk, ApprovalChange.SETTLED)
    if status is PromotionStatus.APPROVED:
        _promote(request=locked, person=person, reason=reason.strip(), now=now)
    else:
        audit_record(
            kind="trust.promotion_denied",
            actor=Actor.person(person),
            agent=agent,
            category=locked.track,
            outcome=locked.to_level,
            reason=reason.strip(),
            data={"request": str(locked.id), "from_level": locked.from_level},
        )
    locked.refresh_from_db()
    return locked


def _promote(*, request: PromotionRequest, person: Any, reason: str, now: datetime) -> None:
    strategy = trust_strategy()
    agent, row = locked_state(agent=request.agent, strategy=strategy, now=now)
    state = state_of(row)
    if state.levels.get(request.track) != request.from_level:
        raise ConflictError(
            f"track {request.track} is now at {state.levels.get(request.track)}, not "
            f"{request.from_level}; the request no longer applies"
        )
    change = LevelChange(
        track=request.track,
        from_level=request.from_level,
        to_level=request.to_level,
        reasons=tuple(request.reasons),
        requires_person=True,
    )
    record_change(
        agent=agent,
        change=change,
        score=request.score,
        now=now,
        person=person,
        decision_reason=reason,
    )
    state_save(row=row, state=apply_change(state, change, now))
