"""Trust writes: evaluate an agent, apply what may happen at once, reset.

An evaluation locks the agent's row (one evaluation per agent at a time),
loads its state and evidence, asks the configured strategy, then in the same
transaction: applies demotions and the promotions that need no person (each
with a ``TrustChange`` and an AuditEvent giving the reasons), turns a
promotion that needs a person into a ``PromotionRequest`` (it appears in the
operators' live inbox after commit), and stores the new
state and, when the score moved, a point for the chart. Promotion to elevated
is never applied here: ``apply_automatic`` refuses it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import structlog
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from audit_app.record import Actor, audit_record
from common.errors import ForbiddenError, InvalidArgumentError
from common.inbox import ApprovalChange, promotion_change_on_commit
from common.roles import Role, has_any_role
from trust_app.models import (
    Agent,
    PromotionRequest,
    PromotionStatus,
    TrustChange,
    TrustChangeKind,
    TrustScoreSample,
    TrustState,
)
from trust_app.policy_changes import policy_changed_on_commit
from trust_app.selectors.trust import (
    agent_evidence,
    agent_facts,
    state_of,
    stored_state,
    trust_applies,
    trust_setting,
    trust_strategy,
)
from trust_app.strategies import Evaluation, LevelChange, TrustStrategy, apply_automatic
from trust_app.strategies import TrustState as PureTrustState

log = structlog.get_logger("synthorg.trust")


def _times(values: Any) -> dict[str, str]:
    return {k: v.isoformat() for k, v in values.items()}


def state_save(*, row: TrustState, state: PureTrustState, **fields: Any) -> None:
    """Write a plain state back to its row (inside the caller's transaction)."""
    row.strategy = state.strategy
    row.levels = dict(state.levels)
    row.level_since = _times(state.level_since)
    row.score = state.score
    row.started_at = state.started_at
    row.last_verified_at = state.last_verified_at
    for name, value in fields.items():
        setattr(row, name, value)
    row.version += 1
    row.save()


def locked_state(
    *, agent: Agent, strategy: TrustStrategy, now: datetime
) -> tuple[Agent, TrustState]:
    """Lock the agent and return its trust row, created (or restarted) for ``strategy``."""
    locked = Agent.objects.select_for_update(no_key=True).get(pk=agent.pk)
    row = stored_state(locked)
    if row is not None and row.strategy == strategy.name:
        return locked, row
    initial = strategy.initial_state(agent_facts(locked, started_at=now if row else None))
    if row is None:
        row = TrustState(agent=locked, started_at=initial.started_at)
    state_save(row=row, state=initial)
    return locked, row


def _withdraw(pending: QuerySet[PromotionRequest], *, now: datetime, reason: str) -> None:
    """Withdraw pending promotion requests; they leave the operators' inbox after commit."""
    for request_id in pending.values_list("id", flat=True):
        promotion_change_on_commit(request_id, ApprovalChange.SETTLED)
    pending.update(status=PromotionStatus.WITHDRAWN, decided_at=now, decision_reason=reason)


def record_change(
    *,
    agent: Agent,
    change: LevelChange,
    score: float,
    now: datetime,
    person: Any = None,
    decision_reason: str = "",
) -> TrustChange:
    """Store one applied change with its AuditEvent; pending requests on its track lapse."""
    kind = TrustChangeKind.PROMOTION if change.is_promotion else TrustChangeKind.DEMOTION
    reason = decision_reason or "; ".join(change.reasons)
    record = TrustChange.objects.create(
        agent=agent,
        track=change.track,
        from_level=change.from_level,
        to_level=change.to_level,
        kind=kind,
        automatic=person is None,
        decided_by=person,
        decided_by_name=person.get_username() if person is not None else "",
        reason=reason,
        reasons=list(change.reasons),
        score=score,
        created_at=now,
    )
    # Pending requests on this track are stale once its level moved.
    _withdraw(
        PromotionRequest.objects.filter(
            agent=agent, track=change.track, status=PromotionStatus.PENDING
        ),
        now=now,
        reason="level changed",
    )
    audit_record(
        kind=f"trust.{'promoted' if change.is_promotion else 'demoted'}",
        actor=Actor.person(person) if person is not None else Actor.system("trust"),
        agent=agent,
        category=change.track,
        outcome=change.to_level,
        reason=reason,
        data={
            "track": change.track,
            "from_level": change.from_level,
            "to_level": change.to_level,
            "score": score,
            "reasons": list(change.reasons),
        },
    )
    verb = "promoted" if change.is_promotion else "lowered"
    policy_changed_on_commit(
        agents=[agent],
        cause=f"trust {verb} the agent's {change.track} level from {change.from_level} "
        f"to {change.to_level}",
        actor=Actor.person(person) if person is not None else Actor.system("trust"),
    )
    return record


def _request_promotion(
    *, agent: Agent, change: LevelChange, score: float, now: datetime
) -> PromotionRequest | None:
    pending = PromotionRequest.objects.filter(
        agent=agent, track=change.track, status=PromotionStatus.PENDING
    )
    if pending.exists():
        return None
    cooldown = timedelta(days=int(trust_setting("REQUEST_COOLDOWN_DAYS")))
    if PromotionRequest.objects.filter(
        agent=agent,
        track=change.track,
        to_level=change.to_level,
        status=PromotionStatus.DENIED,
        decided_at__gte=now - cooldown,
    ).exists():
        return None
    request = PromotionRequest.objects.create(
        agent=agent,
        track=change.track,
        from_level=change.from_level,
        to_level=change.to_level,
        reasons=list(change.reasons),
        score=score,
        created_at=now,
    )
    promotion_change_on_commit(request.id, ApprovalChange.NEW)
    audit_record(
        kind="trust.promotion_requested",
        actor=Actor.system("trust"),
        agent=agent,
        category=change.track,
        outcome=change.to_level,
        reason="; ".join(change.reasons),
        data={"request": str(request.id), "from_level": change.from_level, "score": score},
    )
    return request


@transaction.atomic
def trust_evaluate(*, agent: Agent, now: datetime | None = None) -> Evaluation | None:
    """Evaluate ``agent`` now; None when trust does not apply to it."""
    if not trust_applies(agent):
        return None
    now = now or timezone.now()
    strategy = trust_strategy()
    agent, row = locked_state(agent=agent, strategy=strategy, now=now)
    state = state_of(row)
    evidence = agent_evidence(agent, since=state.started_at)
    evaluation = strategy.evaluate(state, evidence, now, agent_facts(agent, row.started_at))
    updated = apply_automatic(state, evaluation, now)
    for change in evaluation.changes:
        if change.automatic:
            record_change(agent=agent, change=change, score=evaluation.score, now=now)
        else:
            _request_promotion(agent=agent, change=change, score=evaluation.score, now=now)
    moved = abs(row.score - evaluation.score) >= float(trust_setting("SAMPLE_STEP"))
    if moved or not agent.trust_scores.exists():
        TrustScoreSample.objects.create(agent=agent, at=now, score=evaluation.score)
    state_save(
        row=row,
        state=updated,
        track_scores=dict(evaluation.track_scores),
        reasons=list(evaluation.reasons),
        last_evaluated_at=now,
    )
    if evaluation.changes:
        log.info(
            "trust_evaluated",
            agent=agent.name,
            changes=[f"{c.track}:{c.from_level}->{c.to_level}" for c in evaluation.changes],
        )
    return evaluation


def trust_evaluate_all(*, now: datetime | None = None) -> int:
    """Evaluate every active agent trust applies to (re-verification, idle decay)."""
    count = 0
    for agent in Agent.objects.filter(active=True).order_by("name"):
        if trust_evaluate(agent=agent, now=now) is not None:
            count += 1
    return count


@transaction.atomic
def trust_reset(
    *, agent: Agent, person: Any, reason: str, now: datetime | None = None
) -> TrustState:
    """Start the agent's trust over from the strategy's initial state (admins only)."""
    if not has_any_role(person, {Role.ADMIN}):
        raise ForbiddenError("only admins can reset an agent's trust")
    if not reason or not reason.strip():
        raise InvalidArgumentError("reason: say why the trust is reset")
    now = now or timezone.now()
    strategy = trust_strategy()
    agent, row = locked_state(agent=agent, strategy=strategy, now=now)
    before = dict(row.levels)
    initial = replace(strategy.initial_state(agent_facts(agent, started_at=now)), started_at=now)
    state_save(row=row, state=initial, track_scores={}, reasons=[], last_evaluated_at=now)
    _withdraw(
        PromotionRequest.objects.filter(agent=agent, status=PromotionStatus.PENDING),
        now=now,
        reason="trust reset",
    )
    TrustChange.objects.create(
        agent=agent,
        track="all",
        kind=TrustChangeKind.RESET,
        decided_by=person,
        decided_by_name=person.get_username(),
        reason=reason.strip(),
        reasons=[f"{t}: {lvl}" for t, lvl in before.items()],
        score=0.0,
        created_at=now,
    )
    TrustScoreSample.objects.create(agent=agent, at=now, score=0.0)
    audit_record(
        kind="trust.reset",
        actor=Actor.person(person),
        agent=agent,
        reason=reason.strip(),
        data={"before": before, "after": dict(initial.levels)},
    )
    policy_changed_on_commit(
        agents=[agent], cause=f"{person.get_username()} reset the agent's trust",
        actor=Actor.person(person),
    )  # fmt: skip
    return row
