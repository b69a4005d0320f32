"""Config sections other than ``trust``: tool access, autonomy, approval, tools, MCP servers.

The ``autonomy`` and ``approval`` models live in ``common.config.approval`` and are
re-exported here.

Every action-type string is checked against the built-ins plus
``tool_access.custom_action_types`` (passed in the validation context as
``action_types``), so a typo is an error, never a silently skipped approval.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import ConfigDict, Field, field_validator, model_validator

from common.config.approval import (
    DEFAULT_AUTONOMY_PRESETS,
    ApprovalBudget,
    ApprovalMatch,
    ApprovalRateLimit,
    ApprovalRule,
    ApprovalSection,
    ArgumentCondition,
    AutonomyPreset,
    AutonomyPresetName,
    AutonomySection,
    ExpiryPolicy,
    RiskTierName,
)
from common.config.mcp import McpServer, McpToolRules, check_server_names
from common.strict import StrictModel
from common.vocabulary.action_types import (
    DEFAULT_ACTION_TYPES,
    ActionTypeRegistry,
    check_action_type_syntax,
)
from common.vocabulary.levels import (
    AccessLevelOverride,
    AccessLevelPolicy,
    LevelName,
    resolve_levels,
)
from common.vocabulary.names import name_key


class ToolAccessSection(StrictModel):
    """``tool_access``: custom action types and the five access levels."""

    custom_action_types: tuple[str, ...] = ()
    levels: dict[LevelName, AccessLevelOverride] = Field(default_factory=dict)

    @field_validator("custom_action_types")
    @classmethod
    def _well_formed(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            check_action_type_syntax(item)
        return value

    def action_type_registry(self) -> ActionTypeRegistry:
        """Built-in action types plus the custom ones declared here."""
        return DEFAULT_ACTION_TYPES.with_custom(self.custom_action_types)

    def access_levels(self) -> MappingProxyType[str, AccessLevelPolicy]:
        """The five levels: seed defaults with this section's overrides applied."""
        return resolve_levels(self.levels)


class ToolSettings(StrictModel):
    """``tools.<name>``: per-tool switches and limits (None keeps the global default).

    A tool may read more settings of its own; those keys are checked against the
    tool's known settings when the tool registry is built (tools_app.registry).
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_fields(cls, data: Any) -> Any:
        return data  # the tool registry judges a tool's own keys

    enabled: bool = True
    timeout_seconds: float | None = Field(default=None, gt=0, le=3600)
    max_output_bytes: int | None = Field(default=None, gt=0)
    max_calls_per_minute: int | None = Field(default=None, gt=0)


def check_tool_names(value: Mapping[str, ToolSettings]) -> Mapping[str, ToolSettings]:
    """Refuse two ``tools`` keys that name the same tool after case/whitespace folding."""
    seen: dict[str, str] = {}
    for name in value:
        key = name_key(name)
        if not key:
            raise ValueError("tool names must not be empty")
        if key in seen:
            raise ValueError(f"{name!r} and {seen[key]!r} name the same tool")
        seen[key] = name
    return value


__all__ = [
    "DEFAULT_AUTONOMY_PRESETS",
    "ApprovalBudget",
    "ApprovalMatch",
    "ApprovalRateLimit",
    "ApprovalRule",
    "ApprovalSection",
    "ArgumentCondition",
    "AutonomyPreset",
    "AutonomyPresetName",
    "AutonomySection",
    "ExpiryPolicy",
    "McpServer",
    "McpToolRules",
    "RiskTierName",
    "ToolAccessSection",
    "ToolSettings",
    "check_server_names",
    "check_tool_names",
]
