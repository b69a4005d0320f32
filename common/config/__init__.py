"""The YAML config: ``load_config(path) -> SynthOrgConfig``, ``ConfigError`` on any problem."""

from common.config.errors import ConfigError, ConfigProblem
from common.config.loader import load_config, parse_config
from common.config.model import SynthOrgConfig
from common.config.sections import (
    DEFAULT_AUTONOMY_PRESETS,
    ApprovalMatch,
    ApprovalRule,
    ApprovalSection,
    AutonomyPreset,
    AutonomyPresetName,
    AutonomySection,
    McpServer,
    ToolAccessSection,
    ToolSettings,
)
from common.config.trust import (
    DisabledTrust,
    MilestoneTrust,
    PerCategoryTrust,
    TrustSection,
    WeightedTrust,
)

__all__ = [
    "DEFAULT_AUTONOMY_PRESETS",
    "ApprovalMatch",
    "ApprovalRule",
    "ApprovalSection",
    "AutonomyPreset",
    "AutonomyPresetName",
    "AutonomySection",
    "ConfigError",
    "ConfigProblem",
    "DisabledTrust",
    "McpServer",
    "MilestoneTrust",
    "PerCategoryTrust",
    "SynthOrgConfig",
    "ToolAccessSection",
    "ToolSettings",
    "TrustSection",
    "WeightedTrust",
    "load_config",
    "parse_config",
]
