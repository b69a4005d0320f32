"""Config sections ``autonomy`` and ``approval``: presets, rules, budgets, rate limits, expiry.

Every action-type string is checked against the built-ins plus
``tool_access.custom_action_types`` (the ``action_types`` validation context),
so a typo is an error, never a silently skipped approval. The approval policy
that reads these models is ``approvals_app.policy`` (pure Python).
"""

from __future__ import annotations

import re
from enum import StrEnum
from types import MappingProxyType
from typing import Final, Literal

from pydantic import Field, field_validator, model_validator

from common.strict import StrictModel
from common.vocabulary.categories import ToolCategory
from common.vocabulary.levels import ActionPattern


class AutonomyPresetName(StrEnum):
    """The autonomy presets an agent can run under."""

    FULL = "full"
    SEMI = "semi"
    SUPERVISED = "supervised"
    LOCKED = "locked"


class AutonomyPreset(StrictModel):
    """Which action types are approved automatically and which need a human.

    ``unlisted`` says what happens to an action type neither list covers.
    ``mutations_need_approval`` asks a human for every call whose safety class
    is not ``read``, whatever its action type says. ``rules_can_relax: false``
    keeps an auto-approving approval rule from lifting this preset's asks.
    Safety-class approvals (financial, privileged) apply under every preset.
    """

    auto_approve: tuple[ActionPattern, ...] = ()
    human_approval: tuple[ActionPattern, ...] = ()
    unlisted: Literal["auto_approve", "human_approval"] = "human_approval"
    mutations_need_approval: bool = False
    rules_can_relax: bool = True

    @model_validator(mode="after")
    def _no_contradiction(self) -> AutonomyPreset:
        both = sorted(set(self.auto_approve) & set(self.human_approval))
        if both:
            raise ValueError(f"{', '.join(both)} listed in both auto_approve and human_approval")
        return self


# Action types that only look: the supervised preset lets these through.
READ_ONLY_ACTION_TYPES: Final[tuple[str, ...]] = (
    "code:read",
    "vcs:read",
    "memory:read",
    "db:query",
    "browser:screenshot",
    "desktop:screenshot",
)

DEFAULT_AUTONOMY_PRESETS: Final[MappingProxyType[str, AutonomyPreset]] = MappingProxyType(
    {
        AutonomyPresetName.FULL: AutonomyPreset(unlisted="auto_approve"),
        AutonomyPresetName.SEMI: AutonomyPreset(
            human_approval=("deploy", "org", "budget", "comms:external", "tool"),
            unlisted="auto_approve",
        ),
        AutonomyPresetName.SUPERVISED: AutonomyPreset(
            auto_approve=READ_ONLY_ACTION_TYPES,
            unlisted="human_approval",
            mutations_need_approval=True,
        ),
        AutonomyPresetName.LOCKED: AutonomyPreset(
            unlisted="human_approval", mutations_need_approval=True, rules_can_relax=False
        ),
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

    def preset(self, name: str) -> AutonomyPreset:
        """The preset called ``name``; an unknown name gets ``locked`` (fail closed)."""
        try:
            return self.presets[AutonomyPresetName(name)]
        except (ValueError, KeyError):
            return self.presets[AutonomyPresetName.LOCKED]


_TOOL_GLOB_RE: Final = re.compile(r"^[^\s\x00-\x1f]{1,128}$")
_FIELD_RE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z_][A-Za-z0-9_\-]*)*$")
_NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


class ArgumentCondition(StrictModel):
    """A condition on one argument (``field``, dotted for nested objects).

    Exactly one test: ``above`` (a number greater than the threshold), ``path``
    (a glob over the normalised path; ``*`` also crosses ``/``) or ``host`` (a
    glob over the host of a URL or a bare host name, case-insensitive).
    """

    field: str
    above: float | None = None
    path: str | None = None
    host: str | None = None

    @field_validator("field")
    @classmethod
    def _field(cls, value: str) -> str:
        if not _FIELD_RE.match(value):
            raise ValueError("field must be an argument name, dotted for nested objects")
        return value

    @model_validator(mode="after")
    def _one_test(self) -> ArgumentCondition:
        given = [f for f in ("above", "path", "host") if getattr(self, f) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of: above, path, host")
        return self


class ApprovalMatch(StrictModel):
    """What an approval rule applies to: exactly one of a tool glob, an action type or category.

    ``arguments`` narrows the match further: every condition must hold.
    """

    tool: str | None = None
    action_type: ActionPattern | None = None
    category: ToolCategory | None = None
    arguments: tuple[ArgumentCondition, ...] = ()

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


class BudgetPeriod(StrEnum):
    """Calendar periods (UTC) a budget counts over."""

    DAY = "day"
    WEEK = "week"
    MONTH = "month"


class ApprovalBudget(StrictModel):
    """Approve up to ``limit`` calls per ``period`` per agent (per tool with ``per_tool``)."""

    limit: int = Field(ge=1, le=1_000_000)
    period: BudgetPeriod
    per_tool: bool = False
    then: Literal["require_approval", "deny"] = "require_approval"


class RiskTierName(StrEnum):
    """How much harm a call could do; sets its approval's time to live and its ordering."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class ApprovalRule(StrictModel):
    """One approval rule; the approval policy evaluates rules in order, first match decides.

    ``require_approval`` asks people (the seed's "prompt"); ``budget`` approves
    until the budget is spent, then does what ``budget.then`` says.
    """

    name: str | None = None
    match: ApprovalMatch
    disposition: Literal["auto_approve", "require_approval", "deny", "budget"]
    required_approvals: int | None = Field(default=None, ge=1, le=5)
    budget: ApprovalBudget | None = None
    risk_tier: RiskTierName | None = None
    owner_may_approve: bool | None = None
    reason: str | None = Field(default=None, max_length=500)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not _NAME_RE.match(value):
            raise ValueError("name must be 1-64 letters, digits, '_', '.', '-'")
        return value

    @model_validator(mode="after")
    def _approvals_only_when_required(self) -> ApprovalRule:
        if self.required_approvals is not None and self.disposition not in (
            "require_approval",
            "budget",
        ):
            raise ValueError("required_approvals applies only to disposition require_approval")
        if (self.disposition == "budget") != (self.budget is not None):
            raise ValueError("disposition budget needs budget: {limit, period}, and only it")
        return self


class RateLimitScope(StrEnum):
    """What one sliding window counts: an agent's calls, per tool, or a tool's across agents."""

    AGENT = "agent"
    AGENT_TOOL = "agent_tool"
    TOOL = "tool"


class ApprovalRateLimit(StrictModel):
    """At most ``max_calls`` in ``window_seconds``; the next call is answered 429."""

    name: str | None = None
    match: ApprovalMatch | None = None
    per: RateLimitScope = RateLimitScope.AGENT_TOOL
    max_calls: int = Field(ge=1, le=1_000_000)
    window_seconds: float = Field(gt=0, le=31 * 86400)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not _NAME_RE.match(value):
            raise ValueError("name must be 1-64 letters, digits, '_', '.', '-'")
        return value


class ExpiryPolicy(StrictModel):
    """How long a request of one risk tier waits, and what its timing out means.

    ``ttl_seconds`` None uses the SYNTHORG_APPROVAL_TTL_SECONDS setting.
    ``on_expiry: approve`` is refused for high and critical tiers.
    """

    ttl_seconds: int | None = Field(default=None, ge=5, le=7 * 86400)
    on_expiry: Literal["expire", "approve"] = "expire"


class ApprovalSection(StrictModel):
    """``approval``: ordered rules, rate limits, expiry per risk tier, escalation, grants."""

    rules: tuple[ApprovalRule, ...] = ()
    rate_limits: tuple[ApprovalRateLimit, ...] = ()
    expiry: dict[RiskTierName, ExpiryPolicy] = Field(default_factory=dict)
    escalate_after_seconds: int = Field(default=300, ge=1, le=7 * 86400)
    owner_may_approve: bool = False
    grant_max_minutes: int = Field(default=480, ge=1, le=7 * 1440)

    @field_validator("expiry")
    @classmethod
    def _timeouts_never_approve_risky_calls(
        cls, value: dict[RiskTierName, ExpiryPolicy]
    ) -> dict[RiskTierName, ExpiryPolicy]:
        for tier in (RiskTierName.HIGH, RiskTierName.CRITICAL):
            policy = value.get(tier)
            if policy is not None and policy.on_expiry == "approve":
                raise ValueError(
                    f"{tier.value}: on_expiry approve is not allowed for high and critical "
                    "requests (allowed: expire)"
                )
        return value

    @model_validator(mode="after")
    def _distinct_names(self) -> ApprovalSection:
        names = [r.name for r in self.rules if r.name] + [
            r.name for r in self.rate_limits if r.name
        ]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate rule names: {', '.join(duplicates)}")
        return self

    def expiry_for(self, tier: str) -> ExpiryPolicy:
        """The expiry policy of risk tier ``tier`` (defaults when not configured)."""
        try:
            return self.expiry.get(RiskTierName(tier), ExpiryPolicy())
        except ValueError:
            return ExpiryPolicy()
