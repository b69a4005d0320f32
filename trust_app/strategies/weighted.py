"""Weighted trust: one score from weighted factors, one level for every category.

Factors, each 0–1:
- task difficulty: completed tasks weighted by difficulty and quality, against
  a target, so many easy tasks are worth less than a few hard ones;
- completion rate: completed over reported tasks;
- error rate: one minus failed-or-errored over calls that ran;
- human feedback: the mean rating of people, neutral (0.5) until rated.
Each factor is scaled by how much evidence backs it, so one lucky call is not
a track record. The strategy recommends only the next level up, once the score
reaches that transition's threshold and the level is within the ceiling, and
moves down one level (never below the initial level) when the score falls
clearly below the threshold that earned the current level.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import ClassVar, Final

from common.config.trust import WeightedTrust
from common.vocabulary.levels import LevelName
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
)
from trust_app.strategies.evidence import (
    DIFFICULTY_WEIGHT,
    QUALITY_MAX,
    RATING_MAX,
    RATING_MIN,
    Evidence,
)

DIFFICULTY_TARGET: Final = 10.0
TASK_SAMPLE: Final = 10
CALL_SAMPLE: Final = 20
FEEDBACK_SAMPLE: Final = 3
DEMOTION_MARGIN: Final = 0.05
NEUTRAL_FEEDBACK: Final = 0.5


def _confidence(count: int, target: int) -> float:
    return min(1.0, count / target) if target > 0 else 1.0


@dataclass(frozen=True, slots=True)
class WeightedStrategy:
    """The seed's weighted strategy."""

    config: WeightedTrust
    difficulty_target: float = DIFFICULTY_TARGET
    task_sample: int = TASK_SAMPLE
    call_sample: int = CALL_SAMPLE
    feedback_sample: int = FEEDBACK_SAMPLE
    demotion_margin: float = DEMOTION_MARGIN
    name: ClassVar[str] = "weighted"

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

    def factors(self, evidence: Evidence) -> dict[str, float]:
        """The four factors, each 0–1."""
        done = evidence.completed_tasks
        earned = sum(DIFFICULTY_WEIGHT[t.difficulty] * t.quality / QUALITY_MAX for t in done)
        tasks = len(evidence.tasks)
        completion = len(done) / tasks if tasks else 0.0
        ran = evidence.settled_calls
        ratings = [f.rating for f in evidence.feedback]
        mean = sum(ratings) / len(ratings) if ratings else 0.0
        liked = (mean - RATING_MIN) / (RATING_MAX - RATING_MIN) if ratings else NEUTRAL_FEEDBACK
        feedback_weight = _confidence(len(ratings), self.feedback_sample)
        return {
            "task_difficulty": min(1.0, earned / self.difficulty_target),
            "completion_rate": completion * _confidence(tasks, self.task_sample),
            "error_rate": (1.0 - evidence.error_rate) * _confidence(ran, self.call_sample),
            "human_feedback": NEUTRAL_FEEDBACK + (liked - NEUTRAL_FEEDBACK) * feedback_weight,
        }

    def score(self, evidence: Evidence) -> float:
        """The weighted sum of the factors, 0–1."""
        weights = self.config.weights
        factors = self.factors(evidence)
        total = sum(getattr(weights, name) * value for name, value in factors.items())
        return round(min(1.0, max(0.0, total)), 6)

    def threshold(self, to_level: str) -> float:
        """The score needed to enter ``to_level`` from the level below."""
        steps = self.config.promotion_thresholds
        if to_level == LevelName.RESTRICTED:
            return steps.sandboxed_to_restricted
        if to_level == LevelName.STANDARD:
            return steps.restricted_to_standard
        if to_level == ELEVATED:
            return steps.standard_to_elevated.score
        return 0.0

    def evaluate(
        self, state: TrustState, evidence: Evidence, now: datetime, facts: AgentFacts
    ) -> Evaluation:
        """Recommend the next level up, or one down, from the score."""
        evidence = evidence.until(now)
        current = state.levels.get(ALL_TRACKS, self.config.initial_level.value)
        score = self.score(evidence)
        factors = self.factors(evidence)
        reasons = [f"score {score:.2f}"] + [
            f"{k.replace('_', ' ')} {v:.2f}" for k, v in factors.items()
        ]
        change: LevelChange | None = None
        up = level_above(current)
        down = level_below(current)
        if up is not None and rank(up) <= rank(facts.ceiling) and score >= self.threshold(up):
            why = f"score {score:.2f} reached {self.threshold(up):g} for {up}"
            # Elevated always waits for a person (LevelChange enforces it too).
            change = LevelChange(
                track=ALL_TRACKS,
                from_level=current,
                to_level=up,
                reasons=(why,),
                requires_person=up == ELEVATED,
            )
        elif (
            down is not None
            and rank(current) > rank(self.config.initial_level.value)
            and score < self.threshold(current) - self.demotion_margin
        ):
            why = f"score {score:.2f} fell below {self.threshold(current):g} needed for {current}"
            change = LevelChange(
                track=ALL_TRACKS, from_level=current, to_level=down, reasons=(why,)
            )
        elif up is not None and rank(up) > rank(facts.ceiling):
            reasons.append(f"at the configured ceiling {facts.ceiling}")
        return Evaluation(
            recommended=MappingProxyType({ALL_TRACKS: change.to_level if change else current}),
            score=score,
            reasons=tuple(reasons),
            changes=(change,) if change else (),
            track_scores=MappingProxyType({ALL_TRACKS: score}),
        )
