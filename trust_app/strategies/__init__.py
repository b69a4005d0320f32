"""Pure trust strategies: disabled, weighted, per_category, milestone.

No Django here. ``strategy_for(config.trust)`` gives the configured strategy;
services build the state and evidence, call ``evaluate`` and store the result.
"""

from __future__ import annotations

from common.config.trust import DisabledTrust, MilestoneTrust, PerCategoryTrust, WeightedTrust
from trust_app.strategies.base import (
    ALL_TRACKS,
    ELEVATED,
    ORDERED_LEVELS,
    AgentFacts,
    Evaluation,
    LevelChange,
    TrustInvariantError,
    TrustState,
    TrustStrategy,
    apply_automatic,
    apply_change,
    level_above,
    level_below,
    rank,
    stricter_level,
)
from trust_app.strategies.disabled import DisabledStrategy
from trust_app.strategies.evidence import (
    Difficulty,
    Evidence,
    FeedbackEvidence,
    InvocationEvidence,
    InvocationResult,
    TaskEvidence,
)
from trust_app.strategies.milestone import MilestoneStrategy
from trust_app.strategies.per_category import PerCategoryStrategy
from trust_app.strategies.tracks import category_tracks, earned_by_category, track_categories
from trust_app.strategies.weighted import WeightedStrategy

TrustConfig = DisabledTrust | WeightedTrust | PerCategoryTrust | MilestoneTrust


def strategy_for(config: TrustConfig) -> TrustStrategy:
    """The strategy the ``trust`` section configures."""
    if isinstance(config, WeightedTrust):
        return WeightedStrategy(config)
    if isinstance(config, PerCategoryTrust):
        return PerCategoryStrategy(config)
    if isinstance(config, MilestoneTrust):
        return MilestoneStrategy(config)
    return DisabledStrategy(config)


__all__ = [
    "ALL_TRACKS",
    "ELEVATED",
    "ORDERED_LEVELS",
    "AgentFacts",
    "Difficulty",
    "DisabledStrategy",
    "Evaluation",
    "Evidence",
    "FeedbackEvidence",
    "InvocationEvidence",
    "InvocationResult",
    "LevelChange",
    "MilestoneStrategy",
    "PerCategoryStrategy",
    "TaskEvidence",
    "TrustConfig",
    "TrustInvariantError",
    "TrustState",
    "TrustStrategy",
    "WeightedStrategy",
    "apply_automatic",
    "apply_change",
    "category_tracks",
    "earned_by_category",
    "level_above",
    "level_below",
    "rank",
    "strategy_for",
    "stricter_level",
    "track_categories",
]
