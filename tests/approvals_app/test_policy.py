"""The approval policy as tables: dispositions, budgets, presets, safety classes, rule order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from approvals_app.policy import (
    BudgetQuery,
    CallFacts,
    GrantView,
    expiry_of,
    period_start,
    rate_windows,
    route,
)
from common.config import ConfigError, parse_config
from common.config.approval import (
    ApprovalSection,
    AutonomySection,
    BudgetPeriod,
    ExpiryPolicy,
    RiskTierName,
)
from trust_app.policy import Decision, Outcome

NOW = datetime(2026, 5, 14, 15, 30, tzinfo=UTC)  # a Thursday
DIGEST = "a" * 64


def facts(
    tool: str = "write_file",
    *,
    action_type: str = "code:write",
    safety_class: str = "write",
    category: str = "file_system",
    autonomy: str = "full",
    arguments: Mapping[str, Any] | None = None,
) -> CallFacts:
    return CallFacts(
        agent="scout", autonomy=autonomy, tool=tool, category=category,
        action_type=action_type, safety_class=safety_class, arguments=arguments or {},
    )  # fmt: skip


ALLOW = Decision(Outcome.ALLOW, "permitted by level_categories", "level_categories", ("granted",))


def config(approval: dict[str, Any] | None = None, autonomy: dict[str, Any] | None = None) -> Any:
    return parse_config({"approval": approval or {}, "autonomy": autonomy or {}})


def run(
    call: CallFacts,
    *,
    base: Decision = ALLOW,
    approval: dict[str, Any] | None = None,
    autonomy: dict[str, Any] | None = None,
    used: int = 0,
    grants: list[GrantView] | None = None,
) -> Routed:
    cfg = config(approval, autonomy)
    asked: list[BudgetQuery] = []

    def budget_used(query: BudgetQuery) -> int:
        asked.append(query)
        return used

    result = route(
        facts=call, base=base, approval=cfg.approval, autonomy=cfg.autonomy, now=NOW,
        digest=DIGEST, budget_used=budget_used, grants=lambda: grants or [],
    )  # fmt: skip
    return Routed(result.decision, result.risk_tier, result.owner_may_approve, result.grant_id,
                  result.budget_key, asked)  # fmt: skip


@dataclass
class Routed:
    decision: Decision
    risk_tier: str
    owner_may_approve: bool
    grant_id: str | None
    budget_key: str | None
    asked: list[BudgetQuery]


def rule(match: dict[str, Any], disposition: str, **extra: Any) -> dict[str, Any]:
    return {"match": match, "disposition": disposition, **extra}


@pytest.mark.parametrize(
    ("disposition", "extra", "outcome", "required"),
    [
        ("auto_approve", {}, Outcome.ALLOW, 0),
        ("deny", {}, Outcome.DENY, 0),
        ("require_approval", {}, Outcome.REQUIRE_APPROVAL, 1),
        ("require_approval", {"required_approvals": 2}, Outcome.REQUIRE_APPROVAL, 2),
        ("budget", {"budget": {"limit": 3, "period": "day"}}, Outcome.ALLOW, 0),
    ],
)
def test_every_disposition_decides_and_is_named(
    disposition: str, extra: dict[str, Any], outcome: Outcome, required: int
) -> None:
    result = run(
        facts(autonomy="semi"),
        approval={"rules": [rule({"tool": "write_*"}, disposition, name="writes", **extra)]},
    )
    assert result.decision.outcome is outcome
    assert result.decision.required_approvals == required
    assert result.decision.rule == "approval_rule:writes"
    assert any(line.startswith("approval_rule:writes: matches") for line in result.decision.trace)


def test_first_matching_rule_wins_and_unnamed_rules_are_numbered() -> None:
    rules = [
        rule({"tool": "read_*"}, "deny"),
        rule({"action_type": "code"}, "require_approval"),
        rule({"category": "file_system"}, "deny"),
    ]
    result = run(facts(), approval={"rules": rules})
    assert result.decision.outcome is Outcome.REQUIRE_APPROVAL
    assert result.decision.rule == "approval_rule:rule2"
    swapped = run(facts(), approval={"rules": [rules[2], rules[1]]})
    assert (swapped.decision.outcome, swapped.decision.rule) == (
        Outcome.DENY,
        "approval_rule:rule1",
    )


@pytest.mark.parametrize(
    ("condition", "arguments", "matches"),
    [
        ({"field": "amount", "above": 100}, {"amount": 150}, True),
        ({"field": "amount", "above": 100}, {"amount": 100}, False),
        ({"field": "amount", "above": 100}, {"amount": "250.5"}, True),
        # A value the condition cannot judge matches a deny rule (fail closed).
        ({"field": "amount", "above": 100}, {"amount": True}, True),
        ({"field": "amount", "above": 100}, {}, True),
        ({"field": "order.total", "above": 10}, {"order": {"total": 11}}, True),
        ({"field": "path", "path": "/etc/*"}, {"path": "/etc/passwd"}, True),
        ({"field": "path", "path": "/etc/*"}, {"path": "/srv/../etc/shadow"}, True),
        ({"field": "path", "path": "/etc/*"}, {"path": "/srv/etc"}, False),
        ({"field": "url", "host": "*.example.com"}, {"url": "https://API.example.com/x"}, True),
        ({"field": "url", "host": "*.example.com"}, {"url": "https://example.com.evil/x"}, False),
        ({"field": "url", "host": "db.internal"}, {"url": "db.internal:5432"}, True),
        ({"field": "url", "host": "db.internal"}, {"url": 5432}, True),
    ],
)
def test_argument_conditions(
    condition: dict[str, Any], arguments: dict[str, Any], matches: bool
) -> None:
    match = {"tool": "*", "arguments": [condition]}
    result = run(facts(arguments=arguments), approval={"rules": [rule(match, "deny")]})
    assert (result.decision.outcome is Outcome.DENY) is matches


def test_budget_approves_until_spent_then_asks_or_denies() -> None:
    budget = {"limit": 2, "period": "day"}
    rules = [rule({"tool": "write_file"}, "budget", name="daily", budget=budget)]
    first = run(facts(), approval={"rules": rules}, used=0)
    assert first.decision.outcome is Outcome.ALLOW and first.budget_key == "daily"
    assert first.asked == [
        BudgetQuery(key="daily", since=period_start(NOW, BudgetPeriod.DAY), tool=None)
    ]
    last = run(facts(), approval={"rules": rules}, used=1)
    assert last.decision.outcome is Outcome.ALLOW and "2 used" in last.decision.reason
    over = run(facts(), approval={"rules": rules}, used=2)
    assert over.decision.outcome is Outcome.REQUIRE_APPROVAL and over.budget_key is None
    assert "budget of 2 calls per day is spent" in over.decision.reason
    denied = [rule({"tool": "write_file"}, "budget", name="d", budget={**budget, "then": "deny"})]
    assert run(facts(), approval={"rules": denied}, used=2).decision.outcome is Outcome.DENY


def test_budget_per_tool_counts_each_tool_apart() -> None:
    budget = {"limit": 5, "period": "week", "per_tool": True}
    rules = [rule({"category": "file_system"}, "budget", name="files", budget=budget)]
    result = run(facts("edit_file"), approval={"rules": rules})
    assert result.budget_key == "files:edit_file"
    assert result.asked[0].since == datetime(2026, 5, 11, tzinfo=UTC)  # Monday


@pytest.mark.parametrize(
    ("period", "start"),
    [("day", datetime(2026, 5, 14, tzinfo=UTC)), ("week", datetime(2026, 5, 11, tzinfo=UTC)),
     ("month", datetime(2026, 5, 1, tzinfo=UTC))],
)  # fmt: skip
def test_budget_periods_are_calendar_periods(period: str, start: datetime) -> None:
    assert period_start(NOW, BudgetPeriod(period)) == start


@pytest.mark.parametrize(
    ("autonomy", "action_type", "safety_class", "asks"),
    [
        ("full", "deploy:production", "privileged", True),  # safety class floor (2 people)
        ("full", "deploy:production", "write", False),
        ("semi", "deploy:staging", "write", True),
        ("semi", "org:hire", "write", True),
        ("semi", "budget:spend", "write", True),
        ("semi", "comms:external", "network", True),
        ("semi", "tool:create", "write", True),
        ("semi", "comms:internal", "network", False),
        ("semi", "code:write", "write", False),
        ("semi", "code:read", "read", False),
        ("supervised", "code:read", "read", False),
        ("supervised", "code:write", "write", True),
        ("supervised", "code:read", "write", True),  # a mutation whatever its action type
        ("supervised", "comms:internal", "network", True),
        ("locked", "code:read", "read", True),
        ("nonsense", "code:read", "read", True),  # an unknown preset is locked
    ],
)
def test_autonomy_presets(autonomy: str, action_type: str, safety_class: str, asks: bool) -> None:
    result = run(facts(autonomy=autonomy, action_type=action_type, safety_class=safety_class))
    assert (result.decision.outcome is Outcome.REQUIRE_APPROVAL) is asks
    if asks and safety_class != "privileged":
        assert result.decision.rule == f"autonomy:{autonomy}"


def test_locked_preset_is_not_relaxed_by_an_auto_approve_rule() -> None:
    rules = [rule({"tool": "*"}, "auto_approve")]
    assert run(facts(autonomy="full"), approval={"rules": rules}).decision.allowed
    locked = run(facts(autonomy="locked"), approval={"rules": rules})
    assert locked.decision.outcome is Outcome.REQUIRE_APPROVAL
    assert locked.decision.rule == "autonomy:locked"


def test_a_rule_may_relax_semi_for_staging_deploys() -> None:
    call = facts(autonomy="semi", action_type="deploy:staging")
    rules = [rule({"action_type": "deploy:staging"}, "auto_approve", name="staging")]
    assert run(call, approval={"rules": rules}).decision.rule == "approval_rule:staging"


@pytest.mark.parametrize(
    ("base_rule", "required"),
    [("safety_class_financial", 1), ("safety_class_privileged", 2), ("requires_approval", 1)],
)
def test_safety_classes_and_requires_approval_are_floors(base_rule: str, required: int) -> None:
    base = Decision(Outcome.REQUIRE_APPROVAL, "needs people", base_rule, ("x",), required)
    auto = [rule({"tool": "*"}, "auto_approve")]
    result = run(facts(), base=base, approval={"rules": auto})
    assert result.decision.outcome is Outcome.REQUIRE_APPROVAL
    assert (result.decision.required_approvals, result.decision.rule) == (required, base_rule)
    # A rule asking more people than the floor keeps its own count.
    more = [rule({"tool": "*"}, "require_approval", name="three", required_approvals=3)]
    assert run(facts(), base=base, approval={"rules": more}).decision.required_approvals == 3


def test_permission_deny_is_final_and_rule_deny_beats_the_floor() -> None:
    denied = Decision(Outcome.DENY, "not permitted", "default_deny", ("d",))
    auto = [rule({"tool": "*"}, "auto_approve")]
    assert run(facts(), base=denied, approval={"rules": auto}).decision is denied
    floor = Decision(Outcome.REQUIRE_APPROVAL, "money", "safety_class_financial", ("f",), 1)
    deny = [rule({"tool": "*"}, "deny", reason="no payments on Sundays")]
    result = run(facts(), base=floor, approval={"rules": deny})
    assert (result.decision.outcome, result.decision.reason) == (
        Outcome.DENY,
        "no payments on Sundays",
    )


def test_grants_approve_one_person_asks_but_never_two() -> None:
    grant = GrantView(id="g1", tool="write_file", granted_by="olga", arguments_hash=DIGEST)
    asked = run(facts(autonomy="supervised"), grants=[grant])
    assert asked.decision.allowed and asked.decision.rule == "grant:g1" and asked.grant_id == "g1"
    assert "olga" in asked.decision.reason
    other = GrantView(id="g2", tool="write_file", granted_by="olga", arguments_hash="b" * 64)
    assert not run(facts(autonomy="supervised"), grants=[other]).decision.allowed
    two = Decision(Outcome.REQUIRE_APPROVAL, "priv", "safety_class_privileged", ("p",), 2)
    assert run(facts(), base=two, grants=[grant]).decision.required_approvals == 2
    deny = [rule({"tool": "*"}, "deny")]
    assert run(facts(), approval={"rules": deny}, grants=[grant]).decision.denied


def test_grant_patterns_match_named_fields() -> None:
    grant = GrantView(id="g", tool="WRITE_FILE", granted_by="o", pattern={"path": "/work/*.md"})
    ok = facts(autonomy="locked", arguments={"path": "/work/notes.md", "content": "x"})
    assert run(ok, grants=[grant]).decision.allowed
    bad = facts(autonomy="locked", arguments={"path": "/work/notes.py"})
    assert not run(bad, grants=[grant]).decision.allowed
    missing = facts(autonomy="locked", arguments={})
    assert not run(missing, grants=[grant]).decision.allowed


@pytest.mark.parametrize(
    ("call", "tier"),
    [
        (facts(safety_class="read", action_type="code:read"), "low"),
        (facts(safety_class="write"), "medium"),
        (facts(safety_class="network", action_type="comms:internal"), "medium"),
        (facts(safety_class="write", action_type="deploy:production"), "high"),
        (facts(safety_class="financial", action_type="budget:spend"), "high"),
        (facts(safety_class="privileged"), "critical"),
    ],
)
def test_risk_tiers(call: CallFacts, tier: str) -> None:
    assert run(replace(call, autonomy="locked")).risk_tier == tier


def test_a_rule_can_raise_the_risk_tier_and_lift_the_owner_bar() -> None:
    rules = [rule({"tool": "*"}, "require_approval", risk_tier="critical", owner_may_approve=True)]
    result = run(facts(safety_class="read"), approval={"rules": rules})
    assert (result.risk_tier, result.owner_may_approve) == ("critical", True)
    assert run(facts(autonomy="locked")).owner_may_approve is False


def test_rate_windows_per_agent_per_tool_and_per_tool() -> None:
    approval = config(
        {"rate_limits": [
            {"per": "agent", "max_calls": 100, "window_seconds": 60},
            {"name": "git", "match": {"tool": "git_*"}, "per": "agent_tool", "max_calls": 5,
             "window_seconds": 10},
            {"match": {"category": "web"}, "per": "tool", "max_calls": 9, "window_seconds": 1},
        ]}
    ).approval  # fmt: skip
    keys = [w.key for w in rate_windows(facts("git_push"), "A1", approval)]
    assert keys == ["approval:rate_limit1:agent:A1", "approval:git:agent:A1:tool:git_push"]
    web = rate_windows(facts("http_request", category="web"), "A1", approval)
    assert [w.key for w in web][-1] == "approval:rate_limit3:tool:http_request"


def test_a_tools_max_calls_per_minute_is_a_window_per_agent_after_the_configured_ones() -> None:
    approval = config({"rate_limits": [{"per": "agent", "max_calls": 100, "window_seconds": 60}]})
    windows = rate_windows(facts("Git_Push"), "A1", approval.approval, 3)
    assert [w.key for w in windows] == [
        "approval:rate_limit1:agent:A1",
        "tool:git_push:max_calls_per_minute:agent:A1",
    ]
    tool_window = windows[-1]
    assert (tool_window.limit, tool_window.window_seconds) == (3, 60.0)
    assert "tools.Git_Push.max_calls_per_minute" in tool_window.label
    assert rate_windows(facts("git_push"), "A2", approval.approval, 3)[-1].key.endswith(":A2")
    assert len(rate_windows(facts("git_push"), "A1", approval.approval, None)) == 1


def test_expiry_never_approves_high_or_critical() -> None:
    approval = ApprovalSection.model_validate(
        {"expiry": {"low": {"ttl_seconds": 60, "on_expiry": "approve"}}}
    )
    assert expiry_of(approval, "low", 900) == (60, "approve")
    assert expiry_of(approval, "medium", 900) == (900, "expire")
    with pytest.raises(ConfigError, match="on_expiry approve is not allowed"):
        parse_config({"approval": {"expiry": {"high": {"on_expiry": "approve"}}}})
    # Even a section built without validation cannot make a timeout approve a high request.
    forced = ApprovalSection.model_construct(
        expiry={RiskTierName.HIGH: ExpiryPolicy(on_expiry="approve")}
    )
    assert expiry_of(forced, "high", 900) == (900, "expire")


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"rules": [rule({"action_type": "deploy:prod"}, "deny")]}, "unknown action type"),
        ({"rules": [rule({"category": "filesystem"}, "deny")]}, "file_system"),
        ({"rules": [rule({"tool": "x"}, "budget")]}, "disposition budget needs budget"),
        ({"rules": [rule({"tool": "x"}, "deny", budget={"limit": 1, "period": "day"})]},
         "disposition budget needs budget"),
        ({"rules": [rule({"tool": "x"}, "budget", budget={"limit": 1, "period": "year"})]},
         "'day', 'week' or 'month'"),
        ({"rules": [rule({"tool": "x", "arguments": [{"field": "a"}]}, "deny")]},
         "exactly one of: above, path, host"),
        ({"rules": [rule({"tool": "x"}, "prompt")]}, "require_approval"),
        ({"rate_limits": [{"per": "galaxy", "max_calls": 1, "window_seconds": 1}]}, "agent_tool"),
        ({"rules": [rule({"tool": "a"}, "deny", name="x"), rule({"tool": "b"}, "deny", name="x")]},
         "duplicate rule names: x"),
    ],
)  # fmt: skip
def test_config_refuses_mistakes_naming_the_allowed_values(
    data: dict[str, Any], words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"approval": data})
    assert words in str(caught.value)


def test_semi_defaults_keep_ordinary_file_work_running() -> None:
    semi = AutonomySection().preset("semi")
    assert semi.unlisted == "auto_approve"
    assert set(semi.human_approval) == {"deploy", "org", "budget", "comms:external", "tool"}
