"""The replay's tally: what counts as the edit's own change, drift, and trust's hold."""

from __future__ import annotations

import pytest

from trust_app.policy import Outcome
from trust_app.policy.replay import Change, ReplayedCall, ReplayTally, change_of

A, D, R = Outcome.ALLOW, Outcome.DENY, Outcome.REQUIRE_APPROVAL


def call(then: Outcome, now: Outcome, candidate: Outcome, **extra: object) -> ReplayedCall:
    return ReplayedCall(
        invocation_id=f"id-{then}-{now}-{candidate}",
        tool="read_file",
        target="path notes/a.txt",
        then=then,
        now=now,
        candidate=candidate,
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("then", "candidate", "change"),
    [
        (A, D, Change.REFUSED),
        (R, D, Change.REFUSED),
        (D, A, Change.REACHABLE),
        (D, R, Change.REACHABLE),
        (R, A, Change.STOPS_ASKING),
        (A, R, Change.STARTS_ASKING),
        (A, A, None),
        (D, D, None),
        (R, R, None),
    ],
)
def test_each_change_is_named_from_then_to_the_candidate(
    then: Outcome, candidate: Outcome, change: Change | None
) -> None:
    assert change_of(then, candidate) is change


def test_a_change_counts_only_when_the_candidate_differs_from_the_current_settings() -> None:
    tally = ReplayTally(days=7, limit=100)
    tally.add(call(A, D, D))  # refused today already: drift, not the edit's
    tally.add(call(A, A, D))  # the edit refuses it
    result = tally.result(capped=False)
    assert result.counts[Change.REFUSED] == 1
    assert result.drifted == 1 and result.replayed == 2


def test_examples_are_kept_to_a_few_per_change() -> None:
    tally = ReplayTally(days=7, limit=100)
    for _ in range(10):
        tally.add(call(D, D, A))
    result = tally.result(capped=True)
    assert result.counts[Change.REACHABLE] == 10
    assert len(result.examples[Change.REACHABLE]) == 3
    assert result.capped


def test_trust_holding_every_change_makes_the_edit_moot() -> None:
    tally = ReplayTally(days=7, limit=100, held_at="sandboxed")
    tally.add(call(D, D, D, unheld=A))
    result = tally.result(capped=False)
    assert result.held == 1 and result.moot and result.changed == 0
    assert result.held_examples[0].reason == "would be allowed at the level as configured"
    # Control: one change that trust lets through, and the edit is no longer moot.
    tally.add(call(D, D, R, unheld=R))
    assert not tally.result(capped=False).moot


def test_the_same_verdict_everywhere_counts_nothing() -> None:
    tally = ReplayTally(days=7, limit=100)
    for outcome in (A, D, R):
        tally.add(call(outcome, outcome, outcome, unheld=outcome))
    result = tally.result(capped=False)
    assert result.changed == 0 and result.drifted == 0 and result.held == 0
    assert not result.moot
