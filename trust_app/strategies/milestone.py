"""Milestone trust: explicit milestones, periodic re-verification, decay.

One level for every category. The next milestone promotes automatically only
when it says ``auto_promote``; otherwise (and always for elevated) a person
decides. With re-verification enabled, an agent drops one level at once when
- it has been idle ``decay_on_idle_days`` (no call, no task) since its last
  activity or level change;
- its error rate since its last level change exceeds ``decay_on_error_rate``
  (over at least ``error_sample`` calls, so one failure is not a rate);
- every ``interval_days`` the milestone that earned its current level is
  checked again, and no longer holds.
At most one level is lost per evaluation; the clocks restart on every change.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import ClassVar, Final

from common.config.trust import Milestone, MilestoneTrust
from trust_app.strategies.base import (
    ALL_TRACKS,
    ELEVATED,
    AgentFacts,
    Evaluation,
    LevelChange,
    TrustState,
    level_above,
    level_below,
    rank,
    transition_name,
)
from trust_app.strategies.criteria import Criteria, CriteriaResult, check_criteria
from trust_app.strategies.evidence import Evidence

ERROR_SAMPLE: Final = 10


def _criteria(milestone: Milestone) -> Criteria:
    return Criteria(
        tasks_completed=milestone.tasks_completed,
        quality_score_min=milestone.quality_score_min,
        time_active_days=milestone.time_active_days,
        clean_history_days=milestone.clean_history_days,
    )


@dataclass(frozen=True, slots=True)
class MilestoneStrategy:
    """The seed's milestone strategy."""

    config: MilestoneTrust
    error_sample: int = ERROR_SAMPLE
    name: ClassVar[str] = "milestone"

    def tracks(self) -> tuple[str, ...]:
        """One track for every category."""
        return (ALL_TRACKS,)

    def initial_state(self, facts: AgentFacts) -> TrustState:
        """Starts at the configured initial level."""
        return TrustState(
            strategy=self.name,
            levels=MappingProxyType({ALL_TRACKS: self.config.initial_level.value}),
            score=0.0,
            started_at=facts.started_at,
            last_verified_at=facts.started_at,
        )

    def _milestone(self, from_level: str, to_level: str) -> Milestone | None:
        return self.config.milestones.get(transition_name(from_level, to_level))  # type: ignore[call-overload]

    def _check(
        self, milestone: Milestone, evidence: Evidence, state: TrustState, now: datetime
    ) -> CriteriaResult:
        return check_criteria(_criteria(milestone), evidence, state.started_at, now)

    def _decay(
        self, state: TrustState, evidence: Evidence, now: datetime, current: str
    ) -> tuple[list[str], datetime | None]:
        """Reasons to drop one level now, and the re-verification time if one ran."""
        settings = self.config.re_verification
        if not settings.enabled:
            return [], None
        since = state.level_since.get(ALL_TRACKS, state.started_at)
        why: list[str] = []
        recent = evidence.since(since)
        if (
            recent.settled_calls >= self.error_sample
            and recent.error_rate > settings.decay_on_error_rate
        ):
            why.append(
                f"error rate {recent.error_rate:.0%} since {since:%Y-%m-%d} exceeds "
                f"{settings.decay_on_error_rate:.0%}"
            )
        last = max(filter(None, (evidence.last_activity, since, state.started_at)))
        if now - last >= timedelta(days=settings.decay_on_idle_days):
            why.append(f"idle since {last:%Y-%m-%d} ({settings.decay_on_idle_days}+ days)")
        verified_at: datetime | None = None
        if now - state.last_verified_at >= timedelta(days=settings.interval_days):
            verified_at = now
            below = level_below(current)
            earned_by = self._milestone(below, current) if below else None
            if earned_by is not None:
                result = self._check(earned_by, evidence, state, now)
                if not result.met:
                    why.append(
                        f"re-verification: {transition_name(below or '', current)} no longer "
                        f"holds ({'; '.join(result.reasons)})"
                    )
        return why, verified_at

    def evaluate(
        self, state: TrustState, evidence: Evidence, now: datetime, facts: AgentFacts
    ) -> Evaluation:
        """Demote on decay, else promote at the next milestone."""
        evidence = evidence.until(now)
        current = state.levels.get(ALL_TRACKS, self.config.initial_level.value)
        decay, verified_at = self._decay(state, evidence, now, current)
        down = level_below(current)
        reasons: list[str] = []
        score = 1.0
        change: LevelChange | None = None
        if decay and down is not None:
            change = LevelChange(ALL_TRACKS, current, down, tuple(decay))
        up = level_above(current)
        milestone = self._milestone(current, up) if up else None
        if up is not None and milestone is None:
            reasons.append(f"no milestone for {transition_name(current, up)}; stays {current}")
            score = 0.0
        elif up is not None and milestone is not None:
            result = self._check(milestone, evidence, state, now)
            score = result.progress
            reasons.extend(result.reasons)
            if rank(up) > rank(facts.ceiling):
                reasons.append(f"at the configured ceiling {facts.ceiling}")
            elif result.met and change is None:
                change = LevelChange(
                    ALL_TRACKS,
                    current,
                    up,
                    (f"milestone {transition_name(current, up)} reached", *result.reasons),
                    requires_person=not milestone.auto_promote or up == ELEVATED,
                )
        return Evaluation(
            recommended=MappingProxyType({ALL_TRACKS: change.to_level if change else current}),
            score=round(score, 6),
            reasons=tuple(decay + reasons),
            changes=(change,) if change else (),
            track_scores=MappingProxyType({ALL_TRACKS: round(score, 6)}),
            verified_at=verified_at,
        )
