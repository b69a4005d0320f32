"""Step 4 of a call: route the permission decision to approve, deny or ask people.

Order, first decisive step wins:
  1. the permission decision (trust_app.policy.decide) denies → deny;
  2. the first approval rule that matches, in config order:
     deny → deny; require_approval → ask; auto_approve → approve;
     budget → approve while the budget lasts, then ask or deny (``budget.then``);
  3. no rule matched → the agent's autonomy preset (its ``human_approval`` and
     ``auto_approve`` lists, ``unlisted``, ``mutations_need_approval``);
     a preset with ``rules_can_relax: false`` (locked) still asks after a rule approved;
  4. floors never lowered by anything above: the level's ``requires_approval``
     and safety class financial ask one person, privileged two distinct people;
  5. a call that would ask one person and that a live grant covers is approved,
     naming the grant.
The rule that decided is named in the decision; every step is in its trace.
Rate limits are separate (``rate_windows``: ``approval.rate_limits`` and each tool's
``tools.<name>.max_calls_per_minute``): they answer 429 before routing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from approvals_app.policy.grants import GrantView, covering_grant
from approvals_app.policy.matching import CallFacts, match_holds, match_label, match_result
from common.config.approval import (
    ApprovalBudget,
    ApprovalRule,
    ApprovalSection,
    AutonomySection,
    BudgetPeriod,
    RiskTierName,
)
from common.vocabulary.action_types import ActionPatternSet
from trust_app.policy.decision import Decision, Outcome

TIER_ORDER: Final = tuple(RiskTierName)
# Action types whose consequences reach beyond the workspace: high risk by default.
HIGH_RISK_ACTIONS: Final = ActionPatternSet.of(
    ("deploy", "org", "budget", "db:admin", "vcs:push", "tool:create", "comms:external")
)

# Dispositions that restrict: they apply to an argument they cannot judge.
RESTRICTIVE_DISPOSITIONS: Final = frozenset({"deny", "require_approval"})

SAFETY_FLOORS: Final = {
    "financial": (1, "safety_class_financial", "financial tools need a human's approval"),
    "privileged": (
        2,
        "safety_class_privileged",
        "privileged tools need two distinct humans' approval",
    ),
}


@dataclass(frozen=True, slots=True)
class BudgetQuery:
    """How many calls a budget rule already approved for this agent since ``since``."""

    key: str
    since: datetime
    tool: str | None


@dataclass(frozen=True, slots=True)
class Route:
    """The routed decision and what an approval request for it needs."""

    decision: Decision
    risk_tier: str
    owner_may_approve: bool
    grant_id: str | None = None
    budget_key: str | None = None
    # The approval rule's own ``risk_tier`` and name, when the rule that decided set one:
    # an admin's classification the effect-based risk label never goes below.
    rule_tier: str | None = None
    rule: str = ""


def rule_name(rule: ApprovalRule, index: int) -> str:
    """The rule's configured name, else its position (``rule1`` is the first)."""
    return rule.name or f"rule{index + 1}"


def period_start(now: datetime, period: BudgetPeriod) -> datetime:
    """Start of the calendar day, ISO week (Monday) or month containing ``now``."""
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if period is BudgetPeriod.DAY:
        return day
    if period is BudgetPeriod.WEEK:
        return day - timedelta(days=day.weekday())
    return day.replace(day=1)


def risk_tier(facts: CallFacts, required: int, floor: str | None = None) -> str:
    """The policy's tier of a call, which sets how long its request waits and whether timing
    out may approve it: critical for two-person calls, high for money and far-reaching
    actions, then by class. The label people read is the effect's (``policy.risk``)."""
    if facts.safety_class == "privileged" or required >= 2:
        tier = RiskTierName.CRITICAL
    elif facts.safety_class == "financial" or HIGH_RISK_ACTIONS.match(facts.action_type):
        tier = RiskTierName.HIGH
    elif facts.safety_class in ("write", "network"):
        tier = RiskTierName.MEDIUM
    else:
        tier = RiskTierName.LOW
    if floor is not None and TIER_ORDER.index(RiskTierName(floor)) > TIER_ORDER.index(tier):
        tier = RiskTierName(floor)
    return tier.value


@dataclass
class _Verdict:
    outcome: Outcome
    rule: str
    reason: str
    required: int = 0
    budget_key: str | None = None
    rule_tier: str | None = None
    owner_may_approve: bool | None = None
    by_rule: bool = False


def _budget(
    rule: ApprovalRule,
    name: str,
    budget: ApprovalBudget,
    facts: CallFacts,
    now: datetime,
    used: Callable[[BudgetQuery], int],
    trace: list[str],
) -> _Verdict:
    key = f"{name}:{facts.tool}" if budget.per_tool else name
    query = BudgetQuery(key=key, since=period_start(now, budget.period), tool=None)
    spent = used(query)
    scope = f" of {facts.tool}" if budget.per_tool else ""
    label = f"approval_rule:{name}"
    if spent < budget.limit:
        trace.append(f"{label}: budget {spent + 1}/{budget.limit}{scope} this {budget.period}")
        return _Verdict(
            Outcome.ALLOW,
            label,
            f"within the budget of {budget.limit} calls{scope} per "
            f"{budget.period} ({spent + 1} used)",
            budget_key=key,
            by_rule=True,
        )
    trace.append(f"{label}: budget of {budget.limit}{scope} per {budget.period} spent")
    spent_reason = (
        f"the budget of {budget.limit} calls{scope} per {budget.period} is spent; "
        f"it renews at the start of the next {budget.period}"
    )
    if budget.then == "deny":
        return _Verdict(Outcome.DENY, label, spent_reason, by_rule=True)
    return _Verdict(
        Outcome.REQUIRE_APPROVAL, label, spent_reason, rule.required_approvals or 1, by_rule=True
    )


def _by_rules(
    facts: CallFacts,
    approval: ApprovalSection,
    now: datetime,
    used: Callable[[BudgetQuery], int],
    trace: list[str],
) -> _Verdict | None:
    for index, rule in enumerate(approval.rules):
        name = rule_name(rule, index)
        label = f"approval_rule:{name}"
        restrictive = rule.disposition in RESTRICTIVE_DISPOSITIONS
        matched = match_result(rule.match, facts, restrictive=restrictive)
        if not matched.matched:
            if matched.unjudged:
                trace.append(
                    f"{label}: not applied ({match_label(rule.match)}, {rule.disposition}): "
                    f"{'; '.join(matched.unjudged)}, and a permissive rule never matches "
                    "what it cannot judge"
                )
            continue
        trace.append(f"{label}: matches ({match_label(rule.match)}), {rule.disposition}")
        if matched.unjudged:
            trace.append(
                f"{label}: {'; '.join(matched.unjudged)}, so this restrictive rule applies "
                "(fail closed)"
            )
        if rule.disposition == "deny":
            verdict = _Verdict(
                Outcome.DENY,
                label,
                rule.reason or f"approval rule {name} refuses this call",
                by_rule=True,
            )
        elif rule.disposition == "require_approval":
            verdict = _Verdict(
                Outcome.REQUIRE_APPROVAL,
                label,
                rule.reason or f"approval rule {name} asks an operator",
                rule.required_approvals or 1,
                by_rule=True,
            )
        elif rule.disposition == "auto_approve":
            verdict = _Verdict(Outcome.ALLOW, label, f"approved by rule {name}", by_rule=True)
        else:
            assert rule.budget is not None  # the config model guarantees it
            verdict = _budget(rule, name, rule.budget, facts, now, used, trace)
        verdict.rule_tier = rule.risk_tier.value if rule.risk_tier else None
        verdict.owner_may_approve = rule.owner_may_approve
        return verdict
    trace.append("approval rules: none matches")
    return None


def _by_preset(facts: CallFacts, autonomy: AutonomySection, trace: list[str]) -> _Verdict:
    preset = autonomy.preset(facts.autonomy)
    label = f"autonomy:{facts.autonomy}"
    asks = ActionPatternSet.of(preset.human_approval).match(facts.action_type)
    if asks is not None:
        trace.append(f"{label}: {facts.action_type} matches human_approval {asks}")
        return _Verdict(
            Outcome.REQUIRE_APPROVAL,
            label,
            f"autonomy {facts.autonomy} asks an operator for {asks}",
            1,
        )
    if preset.mutations_need_approval and facts.safety_class != "read":
        trace.append(f"{label}: safety class {facts.safety_class} is a mutation")
        return _Verdict(
            Outcome.REQUIRE_APPROVAL,
            label,
            f"autonomy {facts.autonomy} asks an operator for every change",
            1,
        )
    approves = ActionPatternSet.of(preset.auto_approve).match(facts.action_type)
    if approves is not None:
        trace.append(f"{label}: {facts.action_type} matches auto_approve {approves}")
        return _Verdict(Outcome.ALLOW, label, f"autonomy {facts.autonomy} approves {approves}")
    trace.append(f"{label}: {facts.action_type} unlisted, {preset.unlisted}")
    if preset.unlisted == "auto_approve":
        return _Verdict(Outcome.ALLOW, label, f"autonomy {facts.autonomy} approves it")
    return _Verdict(
        Outcome.REQUIRE_APPROVAL, label, f"autonomy {facts.autonomy} asks an operator", 1
    )


def route(
    *,
    facts: CallFacts,
    base: Decision,
    approval: ApprovalSection,
    autonomy: AutonomySection,
    now: datetime,
    digest: str,
    budget_used: Callable[[BudgetQuery], int],
    grants: Callable[[], Sequence[GrantView]],
) -> Route:
    """Route one call; ``budget_used`` and ``grants`` are asked only when needed."""
    trace = list(base.trace)
    if base.outcome is Outcome.DENY:
        return Route(base, risk_tier(facts, 0), approval.owner_may_approve)
    verdict = _by_rules(facts, approval, now, budget_used, trace)
    if verdict is None:
        verdict = _by_preset(facts, autonomy, trace)
    elif verdict.outcome is Outcome.ALLOW and not autonomy.preset(facts.autonomy).rules_can_relax:
        trace.append(f"autonomy:{facts.autonomy}: rules cannot relax this preset, ask")
        verdict = _Verdict(
            Outcome.REQUIRE_APPROVAL,
            f"autonomy:{facts.autonomy}",
            f"autonomy {facts.autonomy} asks an operator for everything",
            1,
            rule_tier=verdict.rule_tier,
            owner_may_approve=verdict.owner_may_approve,
        )
    owner_ok = (
        verdict.owner_may_approve
        if verdict.owner_may_approve is not None
        else approval.owner_may_approve
    )
    if verdict.outcome is Outcome.DENY:
        trace.append(f"{verdict.rule}: deny")
        decision = Decision(Outcome.DENY, verdict.reason, verdict.rule, tuple(trace))
        return Route(decision, risk_tier(facts, 0, verdict.rule_tier), owner_ok)

    # Floors from the permission decision: requires_approval, financial, privileged.
    # The safety class is checked here too, so a permission decision that lost its
    # floor (a bug, a stale cache) still cannot let a financial or privileged call through.
    required, rule, reason = verdict.required, verdict.rule, verdict.reason
    floor, floor_rule, floor_reason = SAFETY_FLOORS.get(facts.safety_class, (0, "", ""))
    if base.outcome is Outcome.REQUIRE_APPROVAL and base.required_approvals >= floor:
        floor, floor_rule, floor_reason = base.required_approvals, base.rule, base.reason
    if floor > required:
        trace.append(f"{floor_rule}: floor of {floor} approval(s) applies")
        required, rule = floor, floor_rule
        reason = floor_reason if verdict.outcome is Outcome.ALLOW else f"{floor_reason}; {reason}"
    budget_key = verdict.budget_key if required == 0 else None

    if required == 1:
        grant = covering_grant(grants(), facts=facts, digest=digest)
        if grant is not None:
            trace.append(f"grant:{grant.id}: granted by {grant.granted_by}, allow")
            decision = Decision(
                Outcome.ALLOW,
                f"approved by a standing grant from {grant.granted_by}",
                f"grant:{grant.id}",
                tuple(trace),
            )
            return Route(decision, risk_tier(facts, 1, verdict.rule_tier), owner_ok, grant.id)

    tier = risk_tier(facts, required, verdict.rule_tier)
    if required == 0:
        trace.append(f"{rule}: allow")
        return Route(
            Decision(Outcome.ALLOW, reason, rule, tuple(trace)), tier, owner_ok, None, budget_key
        )
    # The number of people is the policy's; how risky the call is, its effect says
    # (approvals_app.policy.risk), so the trace names no risk here.
    trace.append(f"{rule}: require_approval ({required})")
    if not reason.endswith("decision"):
        reason += "; the call waits for an operator's decision"
    decision = Decision(Outcome.REQUIRE_APPROVAL, reason, rule, tuple(trace), required)
    return Route(decision, tier, owner_ok, rule_tier=verdict.rule_tier, rule=verdict.rule)


@dataclass(frozen=True, slots=True)
class RateWindow:
    """One sliding window a call counts against."""

    key: str
    limit: int
    window_seconds: float
    label: str


def rate_windows(
    facts: CallFacts,
    agent_id: str,
    approval: ApprovalSection,
    tool_max_per_minute: int | None = None,
) -> list[RateWindow]:
    """The rate limits this call counts against: ``approval.rate_limits`` in config order,
    then the tool's own ``tools.<name>.max_calls_per_minute`` (per agent, 60 s window).
    """
    windows = []
    for index, limit in enumerate(approval.rate_limits):
        # A rate limit restricts: an argument it cannot judge counts against it.
        if limit.match is not None and not match_holds(limit.match, facts, restrictive=True):
            continue
        name = limit.name or f"rate_limit{index + 1}"
        tool = facts.tool.casefold()
        scope = {
            "agent": f"agent:{agent_id}",
            "agent_tool": f"agent:{agent_id}:tool:{tool}",
            "tool": f"tool:{tool}",
        }[limit.per.value]
        label = {
            "agent": f"agent {facts.agent}",
            "agent_tool": f"agent {facts.agent} with {facts.tool}",
            "tool": f"tool {facts.tool} (all agents)",
        }[limit.per.value]
        windows.append(
            RateWindow(f"approval:{name}:{scope}", limit.max_calls, limit.window_seconds, label)
        )
    if tool_max_per_minute is not None and tool_max_per_minute > 0:
        tool = facts.tool.casefold()
        windows.append(
            RateWindow(
                f"tool:{tool}:max_calls_per_minute:agent:{agent_id}",
                tool_max_per_minute,
                60.0,
                f"agent {facts.agent} with {facts.tool} (tools.{facts.tool}.max_calls_per_minute)",
            )
        )
    return windows


def expiry_of(approval: ApprovalSection, tier: str, default_ttl: int) -> tuple[int, str]:
    """Time to live and expiry action of a request of risk ``tier``.

    High and critical requests always expire, whatever the config says: timing
    out never approves them.
    """
    policy = approval.expiry_for(tier)
    action = policy.on_expiry
    if tier in (RiskTierName.HIGH, RiskTierName.CRITICAL):
        action = "expire"
    return policy.ttl_seconds or default_ttl, action
