"""PURE: what a change of permissions would have done to an agent's recent calls.

Each past call is decided again (by the services, with the same decision code as a live
call) three ways: with the agent's current settings, with the candidate settings, and,
when trust holds the agent below its configured level, with the candidate as if trust
did not. The tally compares the candidate's verdict with what happened then:

- ``refused``: allowed or asked then, the candidate refuses it;
- ``reachable``: refused then, the candidate permits it (with or without a person);
- ``stops_asking``: a person was asked then, the candidate allows it outright;
- ``starts_asking``: allowed outright then, the candidate asks a person.

A call counts only when the candidate decides it otherwise than the current settings
do: what changed since the call for other reasons (trust, grants, budgets, a tool's
state) is counted apart (``drifted``) and never credited to the edit. A call that would
change at the configured level but not at the level trust holds the agent to is
``held`` (the candidate's configured level would decide it otherwise than both the
current settings and the candidate under trust): when every change is held, trust makes
the edit moot for these calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from trust_app.policy.decision import Outcome

EXAMPLES_PER_CHANGE: Final = 3


class Change(StrEnum):
    """How the candidate would decide a past call, compared with what happened then."""

    REFUSED = "refused"
    REACHABLE = "reachable"
    STOPS_ASKING = "stops_asking"
    STARTS_ASKING = "starts_asking"


CHANGE_WORDS: Final = MappingProxyType(
    {
        Change.REFUSED: "would now be refused",
        Change.REACHABLE: "become reachable (refused then, permitted now)",
        Change.STOPS_ASKING: "would stop asking a person",
        Change.STARTS_ASKING: "would start asking a person",
    }
)

OUTCOME_WORDS: Final = MappingProxyType(
    {
        Outcome.ALLOW: "allowed",
        Outcome.DENY: "refused",
        Outcome.REQUIRE_APPROVAL: "asked of a person",
    }
)


def change_of(then: Outcome, candidate: Outcome) -> Change | None:
    """The change from ``then`` to ``candidate``; None when both decide alike."""
    if then == candidate:
        return None
    if candidate is Outcome.DENY:
        return Change.REFUSED
    if then is Outcome.DENY:
        return Change.REACHABLE
    if candidate is Outcome.ALLOW:
        return Change.STOPS_ASKING
    return Change.STARTS_ASKING


@dataclass(frozen=True, slots=True)
class ReplayedCall:
    """One past call and its verdicts: then, now, with the candidate (and without trust's
    hold on the candidate, when trust holds the agent lower)."""

    invocation_id: str
    tool: str
    target: str  # what it acted on, as a person reads it ("path notes/a.txt"), or ""
    then: Outcome
    now: Outcome
    candidate: Outcome
    reason: str = ""  # the candidate's reason
    unheld: Outcome | None = None
    at: str = ""  # when the call was made, as people read it


@dataclass(frozen=True, slots=True)
class ReplayExample:
    invocation_id: str
    tool: str
    target: str
    reason: str
    at: str = ""


@dataclass(frozen=True)
class CallReplay:
    """The tally of a replay, with a few examples of each change."""

    days: int
    limit: int
    replayed: int = 0
    capped: bool = False  # more calls than ``limit`` in the period: the newest were replayed
    counts: Mapping[Change, int] = field(default_factory=dict)
    examples: Mapping[Change, tuple[ReplayExample, ...]] = field(default_factory=dict)
    drifted: int = 0
    held: int = 0
    held_examples: tuple[ReplayExample, ...] = ()
    undecidable: int = 0  # calls of tools this console no longer knows
    held_at: str = ""  # the level trust holds the agent to, when it does

    @property
    def changes(self) -> list[tuple[Change, str, int, tuple[ReplayExample, ...]]]:
        """Each change with its words, count and examples, in a fixed order."""
        return [
            (
                change,
                CHANGE_WORDS[change],
                self.counts.get(change, 0),
                self.examples.get(change, ()),
            )
            for change in Change
        ]

    @property
    def changed(self) -> int:
        return sum(self.counts.values())

    @property
    def moot(self) -> bool:
        """True when the edit would change past calls only above the level trust holds."""
        return self.held > 0 and self.changed == 0


class ReplayTally:
    """Counts replayed calls one at a time (the calls are streamed, never all in memory)."""

    def __init__(self, *, days: int, limit: int, held_at: str = "") -> None:
        self._days, self._limit, self._held_at = days, limit, held_at
        self._counts: dict[Change, int] = dict.fromkeys(Change, 0)
        self._examples: dict[Change, list[ReplayExample]] = {c: [] for c in Change}
        self._held: list[ReplayExample] = []
        self._replayed = self._drifted = self._held_count = self._undecidable = 0

    def add(self, call: ReplayedCall) -> None:
        self._replayed += 1
        if call.now != call.then:
            self._drifted += 1
        if call.candidate != call.now:
            change = change_of(call.then, call.candidate)
            if change is not None:
                self._counts[change] += 1
                self._keep(self._examples[change], call, call.reason)
        if call.unheld is not None and call.unheld not in (call.candidate, call.now):
            self._held_count += 1
            words = OUTCOME_WORDS[call.unheld]
            self._keep(self._held, call, f"would be {words} at the level as configured")

    def add_undecidable(self) -> None:
        self._replayed += 1
        self._undecidable += 1

    @staticmethod
    def _keep(kept: list[ReplayExample], call: ReplayedCall, reason: str) -> None:
        if len(kept) < EXAMPLES_PER_CHANGE:
            kept.append(ReplayExample(call.invocation_id, call.tool, call.target, reason, call.at))

    def result(self, *, capped: bool) -> CallReplay:
        return CallReplay(
            days=self._days,
            limit=self._limit,
            replayed=self._replayed,
            capped=capped,
            counts=MappingProxyType(dict(self._counts)),
            examples=MappingProxyType({c: tuple(e) for c, e in self._examples.items()}),
            drifted=self._drifted,
            held=self._held_count,
            held_examples=tuple(self._held),
            undecidable=self._undecidable,
            held_at=self._held_at,
        )
