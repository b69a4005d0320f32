"""The security invariant: no sequence of evidence reaches elevated without a person.

Each strategy runs on the seed's config and on configs that try to break the
rule (built without validation, as a bypassed loader would hand them over).
Only the changes a strategy marks automatic are applied, as the services do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.config.trust import (
    ElevatedThreshold,
    Milestone,
    MilestoneTrust,
    PerCategoryTrust,
    PromotionCriteria,
    WeightedThresholds,
    WeightedTrust,
)
from tests.trust_app.strategies.seeds import T0, facts, milestone, per_category, weighted
from trust_app.strategies import (
    ELEVATED,
    Difficulty,
    Evidence,
    FeedbackEvidence,
    InvocationEvidence,
    InvocationResult,
    LevelChange,
    TaskEvidence,
    TrustConfig,
    TrustInvariantError,
    TrustStrategy,
    apply_automatic,
    strategy_for,
)
from trust_app.strategies.base import Evaluation

Step = tuple[Any, ...]
CATEGORIES = ("file_system", "deployment", "terminal", "version_control", "web")


def _rogue_weighted() -> WeightedTrust:
    gate = ElevatedThreshold.model_construct(score=0.0, requires_human_approval=False)
    steps = WeightedThresholds.model_construct(
        sandboxed_to_restricted=0.0, restricted_to_standard=0.0, standard_to_elevated=gate
    )
    return weighted().model_copy(update={"promotion_thresholds": steps})


def _rogue_milestone() -> MilestoneTrust:
    free = Milestone.model_construct(
        tasks_completed=0,
        quality_score_min=None,
        time_active_days=None,
        clean_history_days=None,
        auto_promote=True,
        requires_human_approval=False,
    )
    transitions = ("sandboxed_to_restricted", "restricted_to_standard", "standard_to_elevated")
    return milestone().model_copy(update={"milestones": dict.fromkeys(transitions, free)})


def _rogue_per_category() -> PerCategoryTrust:
    free = PromotionCriteria.model_construct(
        tasks_completed=0,
        quality_score_min=0.0,
        time_active_days=None,
        requires_human_approval=False,
    )
    transitions = ("sandboxed_to_restricted", "restricted_to_standard", "standard_to_elevated")
    criteria = {c: dict.fromkeys(transitions, free) for c in CATEGORIES}
    return PerCategoryTrust.model_construct(
        strategy="per_category", initial_levels={}, promotion_criteria=criteria
    )


CONFIGS: dict[str, Callable[[], TrustConfig]] = {
    "weighted": weighted,
    "milestone": milestone,
    "per_category": per_category,
    "rogue_weighted": _rogue_weighted,
    "rogue_milestone": _rogue_milestone,
    "rogue_per_category": _rogue_per_category,
}

_task = st.builds(
    lambda q, d, done, cats: (q, d, done, frozenset(cats)),
    st.floats(0, 10),
    st.sampled_from(list(Difficulty)),
    st.booleans(),
    st.sets(st.sampled_from(CATEGORIES), max_size=3),
)
_step = st.tuples(
    st.floats(0, 40),  # days that pass
    st.lists(_task, max_size=25),
    st.lists(
        st.tuples(st.sampled_from(CATEGORIES), st.sampled_from(list(InvocationResult))), max_size=30
    ),
    st.lists(st.integers(1, 5), max_size=4),
)


def _run(strategy: TrustStrategy, steps: list[Step]) -> None:
    state = strategy.initial_state(facts())
    now = T0
    seen = Evidence()
    for days, new_tasks, new_calls, new_ratings in steps:
        now += timedelta(days=days)
        seen = Evidence(
            invocations=seen.invocations
            + tuple(InvocationEvidence(now, c, r) for c, r in new_calls),
            tasks=seen.tasks
            + tuple(
                TaskEvidence(now, f"t{len(seen.tasks)}-{i}", d, q, done, cats)
                for i, (q, d, done, cats) in enumerate(new_tasks)
            ),
            feedback=seen.feedback + tuple(FeedbackEvidence(now, "web", r) for r in new_ratings),
        )
        result = strategy.evaluate(state, seen, now, facts())
        for change in result.changes:
            if change.to_level == ELEVATED and change.is_promotion:
                assert change.requires_person
        state = apply_automatic(state, result, now)
        assert ELEVATED not in state.levels.values()


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(max_examples=40, deadline=None)
@given(steps=st.lists(_step, min_size=1, max_size=8))
def test_no_evidence_reaches_elevated_without_a_person(name: str, steps: list[Step]) -> None:
    _run(strategy_for(CONFIGS[name]()), steps)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_standard_with_perfect_evidence_still_waits_for_a_person(name: str) -> None:
    strategy = strategy_for(CONFIGS[name]())
    state = strategy.initial_state(facts())
    state = replace(
        state, levels=MappingProxyType(dict.fromkeys(state.levels or {"all": ""}, "standard"))
    )
    perfect = Evidence(
        invocations=tuple(
            InvocationEvidence(T0, c, InvocationResult.SUCCESS) for c in CATEGORIES * 10
        ),
        tasks=tuple(
            TaskEvidence(T0, f"t{i}", Difficulty.EXPERT, 10.0, True, frozenset(CATEGORIES))
            for i in range(50)
        ),
        feedback=tuple(FeedbackEvidence(T0, "web", 5) for _ in range(10)),
    )
    now = T0 + timedelta(days=20)
    result = strategy.evaluate(state, perfect, now, facts())
    # The seed's per-category example has no criteria towards elevated at all.
    if name != "per_category":
        assert result.changes, "perfect evidence at standard proposes elevated"
    assert all(c.to_level == ELEVATED and not c.automatic for c in result.changes)
    assert apply_automatic(state, result, now).levels == state.levels


def test_a_change_to_elevated_always_requires_a_person() -> None:
    change = LevelChange("all", "standard", "elevated", ("asked",), requires_person=False)
    assert change.requires_person
    assert not change.automatic


def test_apply_automatic_refuses_a_forged_change() -> None:
    change = LevelChange("all", "standard", "elevated", ("forged",))
    object.__setattr__(change, "requires_person", False)
    strategy = strategy_for(weighted())
    state = replace(strategy.initial_state(facts()), levels=MappingProxyType({"all": "standard"}))
    evaluation = Evaluation(
        recommended={"all": "elevated"}, score=1.0, reasons=(), changes=(change,)
    )
    with pytest.raises(TrustInvariantError):
        apply_automatic(state, evaluation, T0)


def test_demotions_never_wait() -> None:
    change = LevelChange("all", "elevated", "standard", ("idle",), requires_person=True)
    assert change.automatic
