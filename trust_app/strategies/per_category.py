"""Per-category trust: a level per track, promotion criteria per track and transition.

Each track moves on its own evidence only (the calls and tasks in its
categories), so trust earned on files never grants deployment. A transition
without configured criteria does not happen automatically; promotions to
elevated, and every promotion on the deployment track, wait for a person.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import ClassVar, Final

from common.config.trust import PerCategoryTrust, PromotionCriteria
from common.vocabulary.categories import ToolCategory
from common.vocabulary.levels import LevelName
from trust_app.strategies.base import (
    ELEVATED,
    AgentFacts,
    Evaluation,
    LevelChange,
    TrustState,
    level_above,
    rank,
    transition_name,
)
from trust_app.strategies.criteria import Criteria, check_criteria
from trust_app.strategies.evidence import Evidence
from trust_app.strategies.tracks import track_categories

HUMAN_GATED_TRACKS: Final = frozenset({ToolCategory.DEPLOYMENT.value})


@dataclass(frozen=True, slots=True)
class PerCategoryStrategy:
    """The seed's per-category strategy: a trust matrix per agent."""

    config: PerCategoryTrust
    name: ClassVar[str] = "per_category"

    def tracks(self) -> tuple[str, ...]:
        """Every track with an initial level or promotion criteria, in config order."""
        names = [*self.config.initial_levels, *self.config.promotion_criteria]
        return tuple(dict.fromkeys(names))

    def initial_level(self, track: str) -> str:
        """A track's initial level (sandboxed when only its criteria are configured)."""
        level = self.config.initial_levels.get(track)  # type: ignore[call-overload]
        return level.value if level is not None else LevelName.SANDBOXED.value

    def initial_state(self, facts: AgentFacts) -> TrustState:
        """Every track at its initial level."""
        return TrustState(
            strategy=self.name,
            levels=MappingProxyType({t: self.initial_level(t) for t in self.tracks()}),
            score=0.0,
            started_at=facts.started_at,
            last_verified_at=facts.started_at,
        )

    def _criteria(self, track: str, transition: str) -> PromotionCriteria | None:
        per_track = self.config.promotion_criteria.get(track)  # type: ignore[call-overload]
        return per_track.get(transition) if per_track else None

    def evaluate(
        self, state: TrustState, evidence: Evidence, now: datetime, facts: AgentFacts
    ) -> Evaluation:
        """Check each track's next transition against that track's evidence."""
        evidence = evidence.until(now)
        tracks = self.tracks()
        recommended: dict[str, str] = {}
        scores: dict[str, float] = {}
        reasons: list[str] = []
        changes: list[LevelChange] = []
        for track in tracks:
            current = state.levels.get(track, self.initial_level(track))
            recommended[track] = current
            up = level_above(current)
            if up is None:
                scores[track] = 1.0
                continue
            transition = transition_name(current, up)
            configured = self._criteria(track, transition)
            if configured is None:
                scores[track] = 0.0
                reasons.append(f"{track}: no criteria for {transition}; stays {current}")
                continue
            seen = evidence.for_categories(track_categories(track, tracks))
            criteria = Criteria(
                tasks_completed=configured.tasks_completed,
                quality_score_min=configured.quality_score_min,
                time_active_days=configured.time_active_days,
            )
            result = check_criteria(criteria, seen, state.started_at, now)
            scores[track] = result.progress
            lines = tuple(f"{track}: {line}" for line in result.reasons)
            if rank(up) > rank(facts.ceiling):
                reasons.append(f"{track}: at the configured ceiling {facts.ceiling}")
                continue
            if not result.met:
                reasons.extend(lines)
                continue
            requires_person = (
                configured.requires_human_approval or up == ELEVATED or track in HUMAN_GATED_TRACKS
            )
            changes.append(
                LevelChange(
                    track=track,
                    from_level=current,
                    to_level=up,
                    reasons=(f"{track}: criteria for {transition} met", *lines),
                    requires_person=requires_person,
                )
            )
            recommended[track] = up
        score = round(sum(scores.values()) / len(scores), 6) if scores else 0.0
        return Evaluation(
            recommended=MappingProxyType(recommended),
            score=score,
            reasons=tuple(reasons),
            changes=tuple(changes),
            track_scores=MappingProxyType(scores),
        )
