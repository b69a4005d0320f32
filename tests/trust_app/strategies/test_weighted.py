"""The weighted strategy against the seed's example config."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest

from tests.trust_app.strategies.seeds import calls, day, evidence, facts, ratings, tasks, weighted
from trust_app.strategies import (
    ALL_TRACKS,
    Evidence,
    InvocationResult,
    TrustState,
    WeightedStrategy,
)

STRONG = evidence(tasks(10, quality=9.0), calls(20), ratings(3, 5))
WEAK = evidence(
    tasks(10, quality=3.0, completed=False), calls(20, InvocationResult.FAILURE), ratings(3, 1)
)


def _state(strategy: WeightedStrategy, level: str) -> TrustState:
    state = strategy.initial_state(facts())
    return replace(state, levels=MappingProxyType({ALL_TRACKS: level}))


@pytest.mark.parametrize(
    ("level", "ceiling", "seen", "expected", "needs_person"),
    [
        ("sandboxed", "elevated", Evidence(), None, False),
        ("sandboxed", "elevated", STRONG, "restricted", False),
        ("restricted", "elevated", STRONG, "standard", False),
        ("standard", "elevated", STRONG, "elevated", True),
        ("standard", "standard", STRONG, None, False),
        ("restricted", "restricted", STRONG, None, False),
        ("standard", "elevated", WEAK, "restricted", False),
        ("restricted", "elevated", WEAK, "sandboxed", False),
        ("sandboxed", "elevated", WEAK, None, False),
    ],
)
def test_weighted_recommends_one_step(
    level: str, ceiling: str, seen: Evidence, expected: str | None, needs_person: bool
) -> None:
    strategy = WeightedStrategy(weighted())
    result = strategy.evaluate(_state(strategy, level), seen, day(10), facts(ceiling))
    if expected is None:
        assert result.changes == ()
        assert result.recommended[ALL_TRACKS] == level
    else:
        (change,) = result.changes
        assert (change.from_level, change.to_level) == (level, expected)
        assert change.requires_person is needs_person
        assert result.recommended[ALL_TRACKS] == expected


def test_score_uses_the_configured_weights() -> None:
    strategy = WeightedStrategy(weighted())
    factors = strategy.factors(STRONG)
    assert factors == pytest.approx(
        {"task_difficulty": 0.72, "completion_rate": 1.0, "error_rate": 1.0, "human_feedback": 1.0}
    )
    expected = 0.3 * 0.72 + 0.25 + 0.25 + 0.2
    assert strategy.score(STRONG) == pytest.approx(expected)


def test_no_evidence_scores_only_neutral_feedback() -> None:
    assert WeightedStrategy(weighted()).score(Evidence()) == pytest.approx(0.1)


def test_one_lucky_call_is_not_a_track_record() -> None:
    strategy = WeightedStrategy(weighted())
    assert strategy.factors(evidence(calls(1)))["error_rate"] == pytest.approx(1 / 20)


def test_errors_lower_the_score() -> None:
    strategy = WeightedStrategy(weighted())
    half = evidence(tasks(10), calls(10), calls(10, InvocationResult.ERROR))
    assert strategy.factors(half)["error_rate"] == pytest.approx(0.5)
    assert strategy.score(half) < strategy.score(evidence(tasks(10), calls(20)))


def test_denials_are_not_counted_as_errors() -> None:
    strategy = WeightedStrategy(weighted())
    seen = evidence(calls(20), calls(5, InvocationResult.DENIAL))
    assert strategy.factors(seen)["error_rate"] == pytest.approx(1.0)


def test_evidence_from_the_future_is_ignored() -> None:
    strategy = WeightedStrategy(weighted())
    later = evidence(tasks(10, at=day(30)), calls(20, at=day(30)), ratings(3, 5, at=day(30)))
    result = strategy.evaluate(strategy.initial_state(facts()), later, day(10), facts())
    assert result.changes == ()
