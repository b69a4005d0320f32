"""The milestone strategy against the seed's example config, with the clock moved."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from types import MappingProxyType

import pytest

from common.config.trust import MilestoneTrust, ReVerification
from tests.trust_app.strategies.seeds import calls, day, evidence, facts, milestone, tasks
from trust_app.strategies import (
    ALL_TRACKS,
    Evidence,
    InvocationResult,
    MilestoneStrategy,
    TrustState,
    apply_automatic,
)


def _strategy(config: MilestoneTrust | None = None) -> MilestoneStrategy:
    return MilestoneStrategy(config or milestone())


def _state(
    level: str, *, since: datetime | None = None, verified: datetime | None = None
) -> TrustState:
    state = _strategy().initial_state(facts())
    return replace(
        state,
        levels=MappingProxyType({ALL_TRACKS: level}),
        level_since=MappingProxyType({ALL_TRACKS: since or day(0)}),
        last_verified_at=verified or day(0),
    )


def _move(level: str, seen: Evidence, now: datetime, **kwargs: datetime) -> tuple[str, bool] | None:
    result = _strategy().evaluate(_state(level, **kwargs), seen, now, facts())
    if not result.changes:
        return None
    (change,) = result.changes
    return change.to_level, change.requires_person


@pytest.mark.parametrize(
    ("level", "seen", "now", "expected"),
    [
        # sandboxed -> restricted: five tasks at quality 7+, automatic.
        ("sandboxed", evidence(tasks(5, quality=7.0)), day(2), ("restricted", False)),
        ("sandboxed", evidence(tasks(4, quality=9.0)), day(2), None),
        ("sandboxed", evidence(tasks(5, quality=6.9)), day(2), None),
        # restricted -> standard: twenty tasks at 8+ and seven days active.
        ("restricted", evidence(tasks(20, quality=8.0)), day(6.9), None),
        ("restricted", evidence(tasks(20, quality=8.0)), day(7), ("standard", False)),
        ("restricted", evidence(tasks(19, quality=9.0)), day(8), None),
        # standard -> elevated: fourteen clean days, and a person decides.
        ("standard", evidence(calls(5, at=day(10))), day(13.9), None),
        ("standard", evidence(calls(5, at=day(10))), day(14), ("elevated", True)),
        (
            "standard",
            evidence(calls(5, at=day(10)), calls(1, InvocationResult.FAILURE, at=day(5))),
            day(14),
            None,
        ),
        (
            "standard",
            evidence(calls(5, at=day(10)), calls(1, InvocationResult.DENIAL, at=day(5))),
            day(19.5),
            ("elevated", True),
        ),
    ],
)
def test_milestones(
    level: str, seen: Evidence, now: datetime, expected: tuple[str, bool] | None
) -> None:
    assert _move(level, seen, now) == expected


def test_no_promotion_beyond_the_ceiling() -> None:
    result = _strategy().evaluate(
        _state("sandboxed"), evidence(tasks(5)), day(2), facts("sandboxed")
    )
    assert result.changes == ()


def test_idle_decay_demotes_one_level_and_restarts_the_clock() -> None:
    seen = evidence(calls(3, at=day(1)))
    strategy = _strategy()
    ceiling = facts("standard")  # keeps the clean-history milestone out of the way
    state = _state("standard")
    assert strategy.evaluate(state, seen, day(30.9), ceiling).changes == ()
    result = strategy.evaluate(state, seen, day(31), ceiling)
    (change,) = result.changes
    assert (change.to_level, change.requires_person) == ("restricted", False)
    assert "idle" in change.reasons[0]
    state = apply_automatic(state, result, day(31))
    assert state.levels[ALL_TRACKS] == "restricted"
    # The next level goes only after another full idle period.
    assert strategy.evaluate(state, seen, day(60.9), ceiling).changes == ()
    (again,) = strategy.evaluate(state, seen, day(61), ceiling).changes
    assert again.to_level == "sandboxed"


def test_idle_decay_stops_at_the_bottom() -> None:
    assert _move("sandboxed", Evidence(), day(400)) is None


@pytest.mark.parametrize(
    ("good", "bad", "expected"),
    [
        (8, 2, ("restricted", False)),  # 20% > 15%
        (9, 1, None),  # 10%
        (4, 5, None),  # too few calls to be a rate
    ],
)
def test_error_rate_decay(good: int, bad: int, expected: tuple[str, bool] | None) -> None:
    seen = evidence(calls(good, at=day(3)), calls(bad, InvocationResult.ERROR, at=day(3)))
    assert _move("standard", seen, day(4)) == expected


def test_errors_before_the_last_level_change_do_not_count() -> None:
    seen = evidence(calls(10, InvocationResult.FAILURE, at=day(2)), calls(10, at=day(6)))
    assert _move("standard", seen, day(7), since=day(5)) is None


def test_re_verification_every_interval() -> None:
    # Restricted was earned on five good tasks; later work dragged quality below 7.
    seen = evidence(
        tasks(5, quality=9.0, at=day(1)),
        tasks(10, quality=4.0, at=day(50), prefix="late"),
        calls(3, at=day(85)),
    )
    strategy = _strategy()
    before = strategy.evaluate(_state("restricted"), seen, day(89), facts())
    assert before.changes == ()
    assert before.verified_at is None
    due = strategy.evaluate(_state("restricted"), seen, day(90), facts())
    (change,) = due.changes
    assert change.to_level == "sandboxed"
    assert "re-verification" in change.reasons[0]
    assert due.verified_at == day(90)


def test_re_verification_that_holds_only_restarts_its_clock() -> None:
    seen = evidence(tasks(5, quality=9.0, at=day(1)), calls(3, at=day(85)))
    due = _strategy().evaluate(_state("restricted"), seen, day(90), facts())
    assert due.changes == ()
    assert due.verified_at == day(90)
    state = apply_automatic(_state("restricted"), due, day(90))
    assert state.last_verified_at == day(90)


def test_re_verification_disabled_means_no_decay() -> None:
    config = milestone().model_copy(update={"re_verification": ReVerification(enabled=False)})
    result = _strategy(config).evaluate(_state("standard"), Evidence(), day(400), facts())
    assert all(c.to_level != "restricted" for c in result.changes)
    assert result.verified_at is None


def test_scores_progress_towards_the_next_milestone() -> None:
    result = _strategy().evaluate(_state("sandboxed"), evidence(tasks(2)), day(2), facts())
    assert result.score == pytest.approx(0.4)
