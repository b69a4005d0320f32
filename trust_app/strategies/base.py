"""The trust strategy protocol and the plain values it works on.

A strategy is pure: it turns an agent's trust state and the evidence about its
work into an ``Evaluation`` (recommended level per track, score, reasons, and
the level changes it proposes, each saying whether a person must approve).
Services load the evidence, call ``evaluate`` and write what it says.

The security invariant lives here, in the code path and not only in the
config: a ``LevelChange`` that promotes to elevated always requires a person,
whatever the strategy or its configuration asked for, and ``apply_automatic``
refuses to apply such a change without a person's decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import ClassVar, Final, Protocol

from common.vocabulary.levels import LEVEL_RANK, LevelName
from trust_app.strategies.evidence import Evidence

# The ordered levels trust moves an agent along, lowest first.
ORDERED_LEVELS: Final[tuple[str, ...]] = (
    LevelName.SANDBOXED.value,
    LevelName.RESTRICTED.value,
    LevelName.STANDARD.value,
    LevelName.ELEVATED.value,
)
ELEVATED: Final = LevelName.ELEVATED.value
# The one track of the strategies that keep a single level for every category.
ALL_TRACKS: Final = "all"


class TrustInvariantError(RuntimeError):
    """Something tried to promote an agent to elevated without a person's decision."""


def rank(level: str) -> int:
    """Position of an ordered level (sandboxed 0 … elevated 3); -1 for custom or unknown."""
    return LEVEL_RANK.get(level, -1)


def level_above(level: str) -> str | None:
    """The next level up, or None at the top (or outside the order)."""
    position = rank(level)
    if position < 0 or position + 1 >= len(ORDERED_LEVELS):
        return None
    return ORDERED_LEVELS[position + 1]


def level_below(level: str) -> str | None:
    """The next level down, or None at the bottom (or outside the order)."""
    position = rank(level)
    if position <= 0:
        return None
    return ORDERED_LEVELS[position - 1]


def stricter_level(a: str, b: str) -> str:
    """The lower of two ordered levels."""
    return a if rank(a) <= rank(b) else b


def transition_name(from_level: str, to_level: str) -> str:
    """The config's name of a transition, e.g. ``sandboxed_to_restricted``."""
    return f"{from_level}_to_{to_level}"


@dataclass(frozen=True, slots=True)
class AgentFacts:
    """What a strategy needs to know about the agent itself."""

    ceiling: str
    started_at: datetime


@dataclass(frozen=True, slots=True)
class TrustState:
    """An agent's earned trust: a level per track, its score, and its clocks."""

    strategy: str
    levels: Mapping[str, str]
    score: float
    started_at: datetime
    last_verified_at: datetime
    # When each track's level last changed; idle decay and error windows start there.
    level_since: Mapping[str, datetime] = field(default_factory=dict)

    def level(self, track: str) -> str | None:
        """The earned level on ``track`` (None for a track this state does not hold)."""
        return self.levels.get(track)


@dataclass(frozen=True, slots=True)
class LevelChange:
    """One proposed move of one track by one level."""

    track: str
    from_level: str
    to_level: str
    reasons: tuple[str, ...]
    requires_person: bool = False

    def __post_init__(self) -> None:
        # The invariant, whatever the caller passed: elevated is granted by people.
        if self.to_level == ELEVATED and self.is_promotion:
            object.__setattr__(self, "requires_person", True)

    @property
    def is_promotion(self) -> bool:
        """True when the change moves the track up."""
        return rank(self.to_level) > rank(self.from_level)

    @property
    def automatic(self) -> bool:
        """True when the change may be applied without a person (demotions always may)."""
        return not self.is_promotion or not self.requires_person


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What a strategy concluded from the state and the evidence."""

    recommended: Mapping[str, str]
    score: float
    reasons: tuple[str, ...]
    changes: tuple[LevelChange, ...] = ()
    track_scores: Mapping[str, float] = field(default_factory=dict)
    # Set when this evaluation was a periodic re-verification.
    verified_at: datetime | None = None

    @property
    def needs_person(self) -> bool:
        """True when some proposed promotion waits for a person."""
        return any(not change.automatic for change in self.changes)


class TrustStrategy(Protocol):
    """How an agent earns (and loses) trust."""

    name: ClassVar[str]

    def tracks(self) -> tuple[str, ...]:
        """The tracks this strategy keeps a level for."""
        ...

    def initial_state(self, facts: AgentFacts) -> TrustState:
        """The state of an agent that has no evidence yet."""
        ...

    def evaluate(
        self, state: TrustState, evidence: Evidence, now: datetime, facts: AgentFacts
    ) -> Evaluation:
        """Recommend levels from the evidence as of ``now``."""
        ...


def frozen_levels(levels: Mapping[str, str]) -> Mapping[str, str]:
    """A read-only copy of a track → level map."""
    return MappingProxyType(dict(levels))


def apply_change(state: TrustState, change: LevelChange, now: datetime) -> TrustState:
    """``state`` with one change applied; the track's level clock restarts."""
    if state.levels.get(change.track) != change.from_level:
        raise ValueError(
            f"track {change.track} is at {state.levels.get(change.track)}, not {change.from_level}"
        )
    levels = {**state.levels, change.track: change.to_level}
    since = {**state.level_since, change.track: now}
    return replace(state, levels=frozen_levels(levels), level_since=MappingProxyType(since))


def apply_automatic(state: TrustState, evaluation: Evaluation, now: datetime) -> TrustState:
    """Apply the changes that need no person; promotions to elevated are refused here too."""
    for change in evaluation.changes:
        if not change.automatic:
            continue
        if change.is_promotion and change.to_level == ELEVATED:
            raise TrustInvariantError("promotion to elevated always needs a person's decision")
        state = apply_change(state, change, now)
    state = replace(state, score=evaluation.score)
    if evaluation.verified_at is not None:
        state = replace(state, last_verified_at=evaluation.verified_at)
    return state
