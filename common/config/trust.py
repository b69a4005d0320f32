"""The ``trust`` section: disabled, weighted, per_category or milestone.

The shapes are those of the SynthOrg progressive-trust examples. The security
invariant holds at load: no promotion to elevated happens without a human
(``requires_human_approval`` must be true and ``auto_promote`` false), and
every promotion on the deployment track needs a human.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import Field, model_validator

from common.strict import StrictModel
from common.vocabulary.categories import ToolCategory
from common.vocabulary.levels import LevelName

Transition = Literal["sandboxed_to_restricted", "restricted_to_standard", "standard_to_elevated"]
TO_ELEVATED: Final = "standard_to_elevated"

# Trust tracks: the tool categories plus the seed's names ``git`` (version
# control) and ``network`` (web, browser and external data reach).
TrustTrack = Literal[
    "file_system",
    "code_execution",
    "version_control",
    "web",
    "database",
    "terminal",
    "design",
    "communication",
    "analytics",
    "deployment",
    "memory",
    "browser",
    "external_data",
    "desktop",
    "mcp",
    "discovery",
    "other",
    "git",
    "network",
]
_HUMAN_GATED_TRACKS: Final = frozenset({ToolCategory.DEPLOYMENT.value})
_ELEVATED_NEEDS_HUMAN: Final = (
    "promotion to elevated always needs a human; requires_human_approval must be true"
)

Unit = Annotated[float, Field(ge=0.0, le=1.0)]


class DisabledTrust(StrictModel):
    """Trust never changes: agents keep their configured level."""

    strategy: Literal["disabled"] = "disabled"
    initial_level: LevelName = LevelName.STANDARD


class TrustWeights(StrictModel):
    """Weights of the factors of the single trust score; they sum to 1."""

    task_difficulty: Unit = 0.3
    completion_rate: Unit = 0.25
    error_rate: Unit = 0.25
    human_feedback: Unit = 0.2

    @model_validator(mode="after")
    def _sum_to_one(self) -> TrustWeights:
        total = self.task_difficulty + self.completion_rate + self.error_rate + self.human_feedback
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"weights must sum to 1.0 (they sum to {total:g})")
        return self


class ElevatedThreshold(StrictModel):
    """The score needed for elevated; a human always decides."""

    score: Unit = 0.8
    requires_human_approval: bool = True

    @model_validator(mode="after")
    def _human_gated(self) -> ElevatedThreshold:
        if not self.requires_human_approval:
            raise ValueError(_ELEVATED_NEEDS_HUMAN)
        return self


class WeightedThresholds(StrictModel):
    """Scores at which an agent moves up one level."""

    sandboxed_to_restricted: Unit = 0.4
    restricted_to_standard: Unit = 0.6
    standard_to_elevated: ElevatedThreshold = ElevatedThreshold()

    @model_validator(mode="after")
    def _ascending(self) -> WeightedThresholds:
        steps = (
            self.sandboxed_to_restricted,
            self.restricted_to_standard,
            self.standard_to_elevated.score,
        )
        if list(steps) != sorted(steps):
            raise ValueError("promotion thresholds must not decrease from level to level")
        return self


class WeightedTrust(StrictModel):
    """One global score from weighted factors."""

    strategy: Literal["weighted"]
    initial_level: LevelName = LevelName.SANDBOXED
    weights: TrustWeights = TrustWeights()
    promotion_thresholds: WeightedThresholds = WeightedThresholds()


class PromotionCriteria(StrictModel):
    """What an agent must achieve on one track to move up one level."""

    tasks_completed: int = Field(default=0, ge=0)
    quality_score_min: float = Field(default=0.0, ge=0.0, le=10.0)
    time_active_days: int | None = Field(default=None, ge=0)
    requires_human_approval: bool = False


class PerCategoryTrust(StrictModel):
    """Separate levels and promotion criteria per track."""

    strategy: Literal["per_category"]
    initial_levels: dict[TrustTrack, LevelName] = Field(default_factory=dict)
    promotion_criteria: dict[TrustTrack, dict[Transition, PromotionCriteria]] = Field(
        default_factory=dict
    )

    @model_validator(mode="after")
    def _human_gates(self) -> PerCategoryTrust:
        for track, transitions in self.promotion_criteria.items():
            for transition, criteria in transitions.items():
                if criteria.requires_human_approval:
                    continue
                if transition == TO_ELEVATED:
                    raise ValueError(
                        f"promotion_criteria.{track}.{transition}: {_ELEVATED_NEEDS_HUMAN}"
                    )
                if track in _HUMAN_GATED_TRACKS:
                    raise ValueError(
                        f"promotion_criteria.{track}.{transition}: deployment promotions always "
                        "need a human; requires_human_approval must be true"
                    )
        return self


class Milestone(StrictModel):
    """A capability milestone for one promotion."""

    tasks_completed: int | None = Field(default=None, ge=0)
    quality_score_min: float | None = Field(default=None, ge=0.0, le=10.0)
    time_active_days: int | None = Field(default=None, ge=0)
    clean_history_days: int | None = Field(default=None, ge=0)
    auto_promote: bool = False
    requires_human_approval: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> Milestone:
        if self.auto_promote and self.requires_human_approval:
            raise ValueError("auto_promote and requires_human_approval cannot both be true")
        return self


class ReVerification(StrictModel):
    """Periodic re-checks of earned trust."""

    enabled: bool = True
    interval_days: int = Field(default=90, ge=1)
    decay_on_idle_days: int = Field(default=30, ge=1)
    decay_on_error_rate: Unit = 0.15


class MilestoneTrust(StrictModel):
    """Explicit milestones; automatic below standard, human-gated to elevated."""

    strategy: Literal["milestone"]
    initial_level: LevelName = LevelName.SANDBOXED
    milestones: dict[Transition, Milestone] = Field(default_factory=dict)
    re_verification: ReVerification = ReVerification()

    @model_validator(mode="after")
    def _elevated_needs_human(self) -> MilestoneTrust:
        elevated = self.milestones.get(TO_ELEVATED)
        if elevated is not None and (elevated.auto_promote or not elevated.requires_human_approval):
            raise ValueError(
                f"milestones.{TO_ELEVATED}: promotion to elevated always needs a human; set "
                "requires_human_approval: true and auto_promote: false"
            )
        return self


TrustSection = Annotated[
    DisabledTrust | WeightedTrust | PerCategoryTrust | MilestoneTrust,
    Field(discriminator="strategy"),
]
