"""Trust disabled: nothing is earned, the configured level applies."""

from __future__ import annotations

from tests.trust_app.strategies.seeds import STRONG_ALL, day, disabled, facts
from trust_app.strategies import DisabledStrategy, earned_by_category, strategy_for


def test_disabled_keeps_no_tracks_and_never_changes() -> None:
    strategy = strategy_for(disabled())
    assert isinstance(strategy, DisabledStrategy)
    state = strategy.initial_state(facts("standard"))
    assert state.levels == {}
    assert earned_by_category(state.levels) == {}
    for moment in (day(1), day(100), day(1000)):
        result = strategy.evaluate(state, STRONG_ALL, moment, facts("standard"))
        assert result.changes == ()
        assert "disabled" in result.reasons[0]
