"""The per-category strategy against the seed's example config: a trust matrix."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest

from tests.trust_app.strategies.seeds import calls, day, evidence, facts, per_category, tasks
from trust_app.strategies import (
    Evidence,
    PerCategoryStrategy,
    TrustState,
    category_tracks,
    earned_by_category,
)

FILES = frozenset({"file_system"})
DEPLOY = frozenset({"deployment"})


def _strategy() -> PerCategoryStrategy:
    return PerCategoryStrategy(per_category())


def _state(**levels: str) -> TrustState:
    state = _strategy().initial_state(facts())
    return replace(state, levels=MappingProxyType({**state.levels, **levels}))


def test_initial_matrix_is_the_seeds() -> None:
    state = _strategy().initial_state(facts())
    assert dict(state.levels) == {
        "file_system": "restricted",
        "git": "restricted",
        "code_execution": "sandboxed",
        "deployment": "sandboxed",
        "database": "sandboxed",
        "terminal": "sandboxed",
    }


@pytest.mark.parametrize(
    ("seen", "track", "expected", "needs_person"),
    [
        (evidence(tasks(10, quality=7.0, categories=FILES)), "file_system", "standard", False),
        (evidence(tasks(9, quality=9.0, categories=FILES)), "file_system", None, False),
        (evidence(tasks(12, quality=6.5, categories=FILES)), "file_system", None, False),
        (evidence(tasks(20, quality=8.5, categories=DEPLOY)), "deployment", "restricted", True),
        (evidence(tasks(20, quality=8.4, categories=DEPLOY)), "deployment", None, False),
        (evidence(tasks(19, quality=10.0, categories=DEPLOY)), "deployment", None, False),
    ],
)
def test_criteria_per_track(
    seen: Evidence, track: str, expected: str | None, needs_person: bool
) -> None:
    result = _strategy().evaluate(_state(), seen, day(5), facts())
    changes = [c for c in result.changes if c.track == track]
    if expected is None:
        assert changes == []
    else:
        (change,) = changes
        assert change.to_level == expected
        assert change.requires_person is needs_person


def test_trust_earned_on_files_never_grants_deployment() -> None:
    seen = evidence(tasks(500, quality=10.0, categories=FILES), calls(500))
    result = _strategy().evaluate(_state(), seen, day(400), facts())
    assert [c.track for c in result.changes] == ["file_system"]
    assert result.recommended["deployment"] == "sandboxed"
    assert result.track_scores["deployment"] == 0.0


def test_a_task_counts_on_every_track_it_touched() -> None:
    both = frozenset({"file_system", "deployment"})
    seen = evidence(tasks(20, quality=9.0, categories=both))
    tracks = {c.track for c in _strategy().evaluate(_state(), seen, day(5), facts()).changes}
    assert tracks == {"file_system", "deployment"}


def test_a_transition_without_criteria_does_not_happen() -> None:
    seen = evidence(tasks(100, quality=10.0, categories=frozenset({"terminal"})))
    result = _strategy().evaluate(_state(), seen, day(5), facts())
    assert result.changes == ()
    assert any("terminal: no criteria" in r for r in result.reasons)


def test_no_promotion_beyond_the_ceiling() -> None:
    seen = evidence(tasks(10, quality=9.0, categories=FILES))
    result = _strategy().evaluate(_state(), seen, day(5), facts("restricted"))
    assert result.changes == ()
    assert any("ceiling" in r for r in result.reasons)


def test_seed_track_names_cover_their_categories() -> None:
    mapping = category_tracks(["git", "network", "web", "file_system"])
    assert mapping["version_control"] == "git"
    assert mapping["browser"] == "network"
    assert mapping["external_data"] == "network"
    assert mapping["web"] == "web"
    assert "terminal" not in mapping
    earned = earned_by_category({"git": "standard", "file_system": "restricted"})
    assert earned == {"version_control": "standard", "file_system": "restricted"}


def test_git_track_counts_version_control_tasks() -> None:
    strategy = _strategy()
    seen = evidence(tasks(10, categories=frozenset({"version_control"})))
    scoped = seen.for_categories({"version_control"})
    assert len(scoped.tasks) == 10
    assert strategy.evaluate(_state(), seen, day(5), facts()).track_scores["git"] == 0.0
