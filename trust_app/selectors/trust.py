"""Reads about progressive trust: the configured strategy, states, evidence, summaries."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final

from django.conf import settings
from django.db.models import QuerySet

from common.settings_config import synthorg_config
from common.vocabulary.categories import ALL_CATEGORIES
from trust_app.models import (
    AccessLevel,
    Agent,
    InvocationFeedback,
    PromotionRequest,
    PromotionStatus,
    TaskOutcome,
    TrustChange,
    TrustInvocationOutcome,
    TrustScoreSample,
    TrustState,
)
from trust_app.strategies import (
    AgentFacts,
    Difficulty,
    Evidence,
    FeedbackEvidence,
    InvocationEvidence,
    InvocationResult,
    TaskEvidence,
    TrustStrategy,
    category_tracks,
    earned_by_category,
    rank,
    strategy_for,
)
from trust_app.strategies import TrustState as PureTrustState
from trust_app.strategies.effective import EffectiveLevel, effective_level

# Defaults for the trust settings (``SYNTHORG_TRUST_*`` in the Django settings).
DEFAULTS: Final = MappingProxyType(
    {
        # Most recent calls an evaluation looks at.
        "EVIDENCE_CALLS": 5000,
        # Days before a promotion a person denied may be asked for again.
        "REQUEST_COOLDOWN_DAYS": 7,
        # Score points an evaluation must move the score by to add a chart sample.
        "SAMPLE_STEP": 0.005,
        # Points of the score chart and rows of history on the trust page.
        "CHART_POINTS": 200,
        "HISTORY_ROWS": 50,
    }
)


def trust_setting(name: str) -> Any:
    """A trust setting: ``SYNTHORG_TRUST_<NAME>`` from the settings, else its default."""
    return getattr(settings, f"SYNTHORG_TRUST_{name}", DEFAULTS[name])


def trust_strategy() -> TrustStrategy:
    """The strategy the config's ``trust`` section sets."""
    return strategy_for(synthorg_config().trust)


def trust_applies(agent: Agent) -> bool:
    """True when trust can lower this agent's level (custom is outside the order)."""
    return agent.access_level != AccessLevel.CUSTOM and trust_strategy().tracks() != ()


def agent_facts(agent: Agent, started_at: datetime | None = None) -> AgentFacts:
    """The facts a strategy needs about ``agent``."""
    return AgentFacts(ceiling=agent.access_level, started_at=started_at or agent.created_at)


def _parse_times(values: dict[str, str]) -> MappingProxyType[str, datetime]:
    return MappingProxyType({k: datetime.fromisoformat(v) for k, v in values.items()})


def state_of(row: TrustState) -> PureTrustState:
    """The stored state as the strategies' plain value."""
    return PureTrustState(
        strategy=row.strategy,
        levels=MappingProxyType(dict(row.levels)),
        score=row.score,
        started_at=row.started_at,
        last_verified_at=row.last_verified_at,
        level_since=_parse_times(row.level_since),
    )


def stored_state(agent: Agent) -> TrustState | None:
    """The agent's stored trust row, if any (always read afresh, never from a cache)."""
    return TrustState.objects.filter(agent_id=agent.pk).first()


def agent_trust_state(agent: Agent, strategy: TrustStrategy | None = None) -> PureTrustState:
    """The agent's current trust: stored, or the strategy's initial state when none fits."""
    strategy = strategy or trust_strategy()
    row = stored_state(agent)
    if row is not None and row.strategy == strategy.name:
        return state_of(row)
    return strategy.initial_state(agent_facts(agent))


def agent_earned_levels(agent: Agent) -> dict[str, str]:
    """The level the agent has earned per tool category (empty when trust does not apply)."""
    if not trust_applies(agent):
        return {}
    return earned_by_category(agent_trust_state(agent).levels)


def agent_evidence(agent: Agent, *, since: datetime) -> Evidence:
    """Everything known about the agent's work since ``since``."""
    limit = int(trust_setting("EVIDENCE_CALLS"))
    rows = list(
        TrustInvocationOutcome.objects.filter(agent=agent, at__gte=since)
        .order_by("-at")
        .values_list("at", "category", "result", "task_id")[:limit]
    )
    touched: dict[str, set[str]] = defaultdict(set)
    for _, category, _, task_id in rows:
        if task_id:
            touched[task_id].add(category)
    invocations = tuple(InvocationEvidence(at, c, InvocationResult(r)) for at, c, r, _ in rows)
    tasks = tuple(
        TaskEvidence(
            at=t.created_at,
            task_id=t.task_id,
            difficulty=Difficulty(t.difficulty),
            quality=t.quality,
            completed=t.completed,
            categories=frozenset(t.categories) | frozenset(touched.get(t.task_id, ())),
        )
        for t in TaskOutcome.objects.filter(agent=agent, created_at__gte=since)
    )
    feedback = tuple(
        FeedbackEvidence(at, category, rating)
        for at, category, rating in InvocationFeedback.objects.filter(
            agent=agent, created_at__gte=since
        ).values_list("created_at", "category", "rating")
    )
    return Evidence(invocations=invocations, tasks=tasks, feedback=feedback)


def pending_promotions() -> QuerySet[PromotionRequest]:
    """Promotion requests waiting for a person, oldest first (for the operators' inbox)."""
    return (
        PromotionRequest.objects.filter(status=PromotionStatus.PENDING)
        .select_related("agent")
        .order_by("created_at")
    )


def promotion_list(*, status: str | None = None) -> QuerySet[PromotionRequest]:
    """Promotion requests, newest first, optionally of one status."""
    rows = PromotionRequest.objects.select_related("agent").order_by("-created_at")
    return rows.filter(status=status) if status else rows


def recent_trust_changes(limit: int = 20) -> QuerySet[TrustChange]:
    """The latest promotions, demotions and resets of every agent (for the dashboard)."""
    return TrustChange.objects.select_related("agent").order_by("-created_at")[:limit]


def promotion_as_dict(request: PromotionRequest) -> dict[str, Any]:
    """The API shape of a promotion request."""
    return {
        "id": str(request.id),
        "kind": "promotion",
        "agent": {"id": str(request.agent_id), "name": request.agent.name},
        "track": request.track,
        "from_level": request.from_level,
        "to_level": request.to_level,
        "status": request.status,
        "score": request.score,
        "reasons": list(request.reasons),
        "created_at": request.created_at.isoformat(),
        "decided_at": request.decided_at.isoformat() if request.decided_at else None,
        "decided_by": request.decided_by_name or None,
        "decision_reason": request.decision_reason,
    }


def _matrix(
    agent: Agent, levels: dict[str, str], scores: dict[str, float], applies: bool
) -> list[dict[str, Any]]:
    tracks = category_tracks(levels) if applies else {}
    rows = []
    for category in ALL_CATEGORIES:
        track = tracks.get(category)
        earned = levels[track] if track else None
        effective = agent.access_level
        if earned is not None and rank(earned) < rank(agent.access_level):
            effective = earned
        rows.append(
            {
                "category": category,
                "track": track,
                "ceiling": agent.access_level,
                "earned": earned,
                "effective": effective,
                "lowered": effective != agent.access_level,
                "score": scores.get(track) if track else None,
            }
        )
    return rows


def agent_trust_summary(agent: Agent) -> dict[str, Any]:
    """Everything the agent page shows about trust: matrix, evidence, history, chart."""
    strategy = trust_strategy()
    applies = trust_applies(agent)
    state = agent_trust_state(agent, strategy)
    row = stored_state(agent)
    current = row is not None and row.strategy == strategy.name
    evidence = agent_evidence(agent, since=state.started_at)
    track_scores = dict(row.track_scores) if current and row else {}
    history = TrustChange.objects.filter(agent=agent).order_by("-created_at")[
        : int(trust_setting("HISTORY_ROWS"))
    ]
    points = TrustScoreSample.objects.filter(agent=agent).order_by("-at")[
        : int(trust_setting("CHART_POINTS"))
    ]
    return {
        "strategy": strategy.name,
        "applies": applies,
        "ceiling": agent.access_level,
        "score": state.score,
        "levels": dict(state.levels),
        "matrix": _matrix(agent, dict(state.levels), track_scores, applies),
        "reasons": list(row.reasons) if current and row else [],
        "started_at": state.started_at,
        "last_evaluated_at": row.last_evaluated_at if current and row else None,
        "last_verified_at": state.last_verified_at,
        "evidence": {
            "calls": len(evidence.invocations),
            "succeeded": evidence.count(InvocationResult.SUCCESS),
            "failed": evidence.count(InvocationResult.FAILURE),
            "errors": evidence.count(InvocationResult.ERROR),
            "denied": evidence.count(InvocationResult.DENIAL),
            "error_rate": evidence.error_rate,
            "tasks": len(evidence.tasks),
            "tasks_completed": len(evidence.completed_tasks),
            "mean_quality": evidence.mean_quality,
            "ratings": len(evidence.feedback),
            "last_activity": evidence.last_activity,
        },
        "history": [
            {
                "at": change.created_at,
                "kind": change.kind,
                "track": change.track,
                "from_level": change.from_level,
                "to_level": change.to_level,
                "automatic": change.automatic,
                "decided_by": change.decided_by_name or ("automatic" if change.automatic else ""),
                "reason": change.reason,
                "reasons": list(change.reasons),
            }
            for change in history
        ],
        "chart": [{"at": p.at, "score": p.score} for p in reversed(list(points))],
        "pending": [
            promotion_as_dict(p)
            for p in PromotionRequest.objects.filter(
                agent=agent, status=PromotionStatus.PENDING
            ).select_related("agent")
        ],
    }


def agent_effective_level(agent: Agent) -> EffectiveLevel:
    """The level that applies to ``agent`` now: the lower of the admin's and trust's, and why."""
    return agent_effective_level_at(agent, agent.access_level)


def _applies_at(level: str, strategy: TrustStrategy) -> bool:
    return level != AccessLevel.CUSTOM and strategy.tracks() != ()


def agent_effective_level_at(agent: Agent, admin_level: str) -> EffectiveLevel:
    """The level that would apply to ``agent`` were the admin's level ``admin_level``."""
    strategy = trust_strategy()
    applies = _applies_at(admin_level, strategy)
    earned = dict(agent_trust_state(agent, strategy).levels) if applies else {}
    return effective_level(
        admin_level=admin_level, strategy=strategy.name, applies=applies, earned=earned
    )


def agent_earned_levels_at(agent: Agent, admin_level: str) -> dict[str, str]:
    """Per category, the level trust holds ``agent`` at, were the admin's level ``admin_level``."""
    strategy = trust_strategy()
    if not _applies_at(admin_level, strategy):
        return {}
    return earned_by_category(agent_trust_state(agent, strategy).levels)
