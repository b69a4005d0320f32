"""The seed's four example trust configs and evidence builders for the strategy tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import yaml

from common.config.trust import DisabledTrust, MilestoneTrust, PerCategoryTrust, WeightedTrust
from trust_app.strategies import (
    AgentFacts,
    Difficulty,
    Evidence,
    FeedbackEvidence,
    InvocationEvidence,
    InvocationResult,
    TaskEvidence,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)

SEED_DISABLED = """
strategy: "disabled"
initial_level: "standard"
"""
SEED_WEIGHTED = """
strategy: "weighted"
initial_level: "sandboxed"
weights:
  task_difficulty: 0.3
  completion_rate: 0.25
  error_rate: 0.25
  human_feedback: 0.2
promotion_thresholds:
  sandboxed_to_restricted: 0.4
  restricted_to_standard: 0.6
  standard_to_elevated:
    score: 0.8
    requires_human_approval: true
"""
SEED_PER_CATEGORY = """
strategy: "per_category"
initial_levels:
  file_system: "restricted"
  git: "restricted"
  code_execution: "sandboxed"
  deployment: "sandboxed"
  database: "sandboxed"
  terminal: "sandboxed"
promotion_criteria:
  file_system:
    restricted_to_standard:
      tasks_completed: 10
      quality_score_min: 7.0
  deployment:
    sandboxed_to_restricted:
      tasks_completed: 20
      quality_score_min: 8.5
      requires_human_approval: true
"""
SEED_MILESTONE = """
strategy: "milestone"
initial_level: "sandboxed"
milestones:
  sandboxed_to_restricted:
    tasks_completed: 5
    quality_score_min: 7.0
    auto_promote: true
  restricted_to_standard:
    tasks_completed: 20
    quality_score_min: 8.0
    time_active_days: 7
    auto_promote: true
  standard_to_elevated:
    requires_human_approval: true
    clean_history_days: 14
re_verification:
  enabled: true
  interval_days: 90
  decay_on_idle_days: 30
  decay_on_error_rate: 0.15
"""


def _load(text: str) -> dict[str, Any]:
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def disabled() -> DisabledTrust:
    return DisabledTrust.model_validate(_load(SEED_DISABLED))


def weighted() -> WeightedTrust:
    return WeightedTrust.model_validate(_load(SEED_WEIGHTED))


def per_category() -> PerCategoryTrust:
    return PerCategoryTrust.model_validate(_load(SEED_PER_CATEGORY))


def milestone() -> MilestoneTrust:
    return MilestoneTrust.model_validate(_load(SEED_MILESTONE))


def facts(ceiling: str = "elevated", started_at: datetime = T0) -> AgentFacts:
    return AgentFacts(ceiling=ceiling, started_at=started_at)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def tasks(
    n: int,
    *,
    at: datetime | None = None,
    quality: float = 9.0,
    difficulty: Difficulty = Difficulty.HARD,
    completed: bool = True,
    categories: frozenset[str] = frozenset({"file_system"}),
    prefix: str = "t",
) -> tuple[TaskEvidence, ...]:
    moment = at or day(1)
    return tuple(
        TaskEvidence(moment, f"{prefix}{i}", difficulty, quality, completed, categories)
        for i in range(n)
    )


def calls(
    n: int,
    result: InvocationResult = InvocationResult.SUCCESS,
    *,
    at: datetime | None = None,
    category: str = "file_system",
) -> tuple[InvocationEvidence, ...]:
    return tuple(InvocationEvidence(at or day(1), category, result) for _ in range(n))


def ratings(n: int, rating: int, *, at: datetime | None = None) -> tuple[FeedbackEvidence, ...]:
    return tuple(FeedbackEvidence(at or day(1), "file_system", rating) for _ in range(n))


def evidence(*parts: tuple[object, ...]) -> Evidence:
    invocations = tuple(x for p in parts for x in p if isinstance(x, InvocationEvidence))
    task_list = tuple(x for p in parts for x in p if isinstance(x, TaskEvidence))
    feedback = tuple(x for p in parts for x in p if isinstance(x, FeedbackEvidence))
    return Evidence(invocations=invocations, tasks=task_list, feedback=feedback)


STRONG_ALL = evidence(
    tasks(30, quality=9.5, categories=frozenset({"file_system", "deployment", "terminal"})),
    calls(30),
    ratings(5, 5),
)
