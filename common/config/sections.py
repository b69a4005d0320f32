"""Config sections other than ``trust``: tool access, autonomy, approval, tools, MCP servers.

Every action-type string is checked against the built-ins plus
``tool_access.custom_action_types`` (passed in the validation context as
``action_types``), so a typo is an error, never a silently skipped approval.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from trust_app.policy.action_types import (
    DEFAULT_ACTION_TYPES,
    ActionTypeRegistry,
    check_action_type_syntax,
)
from trust_app.policy.categories import ToolCategory
from trust_app.policy.levels import (
    AccessLevelOverride,
    AccessLevelPolicy,
    ActionPattern,
    LevelName,
    resolve_levels,
)
from trust_app.policy.names import name_key
from trust_app.policy.network import NetworkTargetError, parse_url
from trust_app.policy.strict import StrictModel


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


class AutonomyPresetName(StrEnum):
    """The autonomy presets an agent can run under."""

    FULL = "full"
    SEMI = "semi"
    SUPERVISED = "supervised"
    LOCKED = "locked"


class AutonomyPreset(StrictModel):
    """Which action types are approved automatically and which need a human.

    ``unlisted`` says what happens to an action type neither list covers.
    Safety-class approvals (financial, privileged) apply under every preset.
    """

    auto_approve: tuple[ActionPattern, ...] = ()
    human_approval: tuple[ActionPattern, ...] = ()
    unlisted: Literal["auto_approve", "human_approval"] = "human_approval"

    @model_validator(mode="after")
    def _no_contradiction(self) -> AutonomyPreset:
        both = sorted(set(self.auto_approve) & set(self.human_approval))
        if both:
            raise ValueError(f"{', '.join(both)} listed in both auto_approve and human_approval")
        return self


DEFAULT_AUTONOMY_PRESETS: Final[MappingProxyType[str, AutonomyPreset]] = MappingProxyType(
    {
        AutonomyPresetName.FULL: AutonomyPreset(unlisted="auto_approve"),
        AutonomyPresetName.SEMI: AutonomyPreset(
            human_approval=(
                "vcs:push",
                "deploy",
                "comms:external",
                "budget",
                "org",
                "db:mutate",
                "db:admin",
                "arch:decide",
                "tool:create",
            ),
            unlisted="auto_approve",
        ),
        AutonomyPresetName.SUPERVISED: AutonomyPreset(
            auto_approve=("code:read", "vcs:read", "memory:read", "db:query"),
            unlisted="human_approval",
        ),
        AutonomyPresetName.LOCKED: AutonomyPreset(unlisted="human_approval"),
    }
)


class AutonomySection(StrictModel):
    """``autonomy``: the default preset and the presets (missing ones keep their defaults)."""

    default: AutonomyPresetName = AutonomyPresetName.SEMI
    presets: dict[AutonomyPresetName, AutonomyPreset] = Field(
        default_factory=lambda: {
            AutonomyPresetName(k): v for k, v in DEFAULT_AUTONOMY_PRESETS.items()
        }
    )

    @field_validator("presets")
    @classmethod
    def _fill_defaults(
        cls, value: dict[AutonomyPresetName, AutonomyPreset]
    ) -> dict[AutonomyPresetName, AutonomyPreset]:
        return {**{AutonomyPresetName(k): v for k, v in DEFAULT_AUTONOMY_PRESETS.items()}, **value}


_TOOL_GLOB_RE: Final = re.compile(r"^[^\s\x00-\x1f]{1,128}$")


class ApprovalMatch(StrictModel):
    """What an approval rule applies to: exactly one of a tool glob, an action type or category."""

    tool: str | None = None
    action_type: ActionPattern | None = None
    category: ToolCategory | None = None

    @field_validator("tool")
    @classmethod
    def _glob(cls, value: str | None) -> str | None:
        if value is not None and not _TOOL_GLOB_RE.match(value):
            raise ValueError("tool glob must be 1-128 characters without whitespace")
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> ApprovalMatch:
        given = [f for f in ("tool", "action_type", "category") if getattr(self, f) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of: tool, action_type, category")
        return self


class ApprovalRule(StrictModel):
    """One approval rule; the approval policy evaluates rules in order."""

    match: ApprovalMatch
    disposition: Literal["auto_approve", "require_approval", "deny"]
    required_approvals: int | None = Field(default=None, ge=1, le=5)

    @model_validator(mode="after")
    def _approvals_only_when_required(self) -> ApprovalRule:
        if self.required_approvals is not None and self.disposition != "require_approval":
            raise ValueError("required_approvals applies only to disposition require_approval")
        return self


class ApprovalSection(StrictModel):
    """``approval``: ordered rules."""

    rules: tuple[ApprovalRule, ...] = ()


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


_SERVER_NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


class McpServer(StrictModel):
    """One MCP server the console imports tools from."""

    name: str
    transport: Literal["stdio", "http"]
    command: tuple[str, ...] | None = None
    url: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True
    timeout_seconds: float = Field(default=30.0, gt=0, le=600)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _SERVER_NAME_RE.match(value):
            raise ValueError("name must be 1-64 letters, digits, '_', '.', '-'")
        return value

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServer:
        if self.transport == "stdio":
            if not self.command or self.url is not None:
                raise ValueError("transport stdio needs command (a list) and no url")
        else:
            if self.url is None or self.command is not None:
                raise ValueError("transport http needs url and no command")
            try:
                parse_url(self.url, schemes=frozenset({"http", "https"}))
            except NetworkTargetError as exc:
                raise ValueError(f"url: {exc}") from exc
        return self


def check_server_names(value: tuple[McpServer, ...]) -> tuple[McpServer, ...]:
    """Refuse two MCP servers with the same name."""
    names = [s.name.casefold() for s in value]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate MCP server names: {', '.join(duplicates)}")
    return value
