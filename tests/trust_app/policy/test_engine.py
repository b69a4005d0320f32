"""Resolution order, level/category table, approvals and listing."""

from __future__ import annotations

import pytest

from tests.trust_app.policy.factories import agent, tool
from trust_app.policy import (
    ALL_CATEGORIES,
    Decision,
    Outcome,
    Rule,
    decide,
    list_permitted,
)

# Written out independently of the implementation: what each level permits.
SANDBOXED = {"file_system", "code_execution", "version_control", "memory", "discovery"}
RESTRICTED = SANDBOXED | {"web", "database", "design", "analytics", "browser", "external_data"}
STANDARD = RESTRICTED | {"terminal", "communication", "desktop", "mcp"}
ELEVATED = set(ALL_CATEGORIES)
EXPECTED_CATEGORIES = {
    "sandboxed": SANDBOXED,
    "restricted": RESTRICTED,
    "standard": STANDARD,
    "elevated": ELEVATED,
    "custom": {"discovery"},
}


def test_there_are_seventeen_categories() -> None:
    assert len(ALL_CATEGORIES) == 17
    assert len(set(ALL_CATEGORIES)) == 17


@pytest.mark.parametrize("level", sorted(EXPECTED_CATEGORIES))
@pytest.mark.parametrize("category", ALL_CATEGORIES)
def test_level_category_table(level: str, category: str) -> None:
    decision = decide(agent(level), tool(f"t_{category}", category=category))
    if category in EXPECTED_CATEGORIES[level]:
        assert decision.outcome is not Outcome.DENY, decision
        assert decision.rule in {
            Rule.LEVEL_CATEGORIES,
            Rule.REQUIRES_APPROVAL,
        }, decision
    else:
        assert decision.outcome is Outcome.DENY
        expected = Rule.CUSTOM_DENY if level == "custom" else Rule.DEFAULT_DENY
        assert decision.rule == expected
        assert category in decision.reason


@pytest.mark.parametrize("level", sorted(EXPECTED_CATEGORIES))
def test_denied_list_beats_everything(level: str) -> None:
    policy = agent(level, allowed=["read_file"], denied=["  READ_File "])
    decision = decide(policy, tool("read_file"))
    assert decision.outcome is Outcome.DENY
    assert decision.rule == Rule.DENIED_LIST
    assert "denied list" in decision.reason


def test_denied_list_catches_lookalike_names() -> None:
    # A Cyrillic small ie in the tool name must not dodge a denial of "delete_file".
    lookalike = tool("d\u0435lete_file", action_type="code:delete")
    decision = decide(agent("elevated", denied=["delete_file"]), lookalike)
    assert decision.rule == Rule.DENIED_LIST


def test_allowed_list_grants_beyond_level_categories() -> None:
    web = tool("fetch", category="web")
    assert decide(agent("sandboxed", network="open"), web).rule == Rule.DEFAULT_DENY
    decision = decide(agent("sandboxed", allowed=["Fetch"], network="open"), web)
    assert decision.outcome is Outcome.ALLOW
    assert decision.rule == Rule.ALLOWED_LIST


def test_allowed_list_does_not_lift_sub_constraints() -> None:
    # On the allowed list, but the sandboxed level has no network.
    decision = decide(agent("sandboxed", allowed=["fetch"]), tool("fetch", category="web"))
    assert decision.outcome is Outcome.DENY
    assert decision.rule == Rule.NETWORK_MODE


def test_custom_level_grants_only_listed_tools() -> None:
    custom = agent("custom", allowed=["notes"], file_system="workspace_only")
    assert decide(custom, tool("read_file")).rule == Rule.CUSTOM_DENY
    listed = decide(custom, tool("notes", category="memory"))
    assert listed.outcome is Outcome.ALLOW
    assert listed.rule == Rule.ALLOWED_LIST
    assert decide(custom, tool("list_tools", category="discovery")).outcome is Outcome.ALLOW


def test_disabled_tool_is_denied_even_when_allowed() -> None:
    decision = decide(agent("elevated", allowed=["x"]), tool("x", enabled=False))
    assert decision.rule == Rule.TOOL_DISABLED


def test_unknown_category_is_denied() -> None:
    decision = decide(agent("elevated"), tool("x", category="quantum", action_type="code:read"))
    assert decision.rule == Rule.UNKNOWN_CATEGORY


def test_trace_is_ordered_and_ends_with_deciding_step() -> None:
    decision = decide(agent("standard"), tool("read_file"), {"path": "src/a.py"})
    assert decision.trace[0].startswith("agent 'alpha' at level standard")
    assert decision.trace.index("denied list: not listed") < decision.trace.index(
        "allowed list: not listed"
    )
    assert decision.trace[-1] == "level_categories: allow"


@pytest.mark.parametrize(
    ("safety_class", "outcome", "approvals", "rule"),
    [
        ("read", Outcome.ALLOW, 0, Rule.LEVEL_CATEGORIES),
        ("write", Outcome.ALLOW, 0, Rule.LEVEL_CATEGORIES),
        ("financial", Outcome.REQUIRE_APPROVAL, 1, Rule.SAFETY_FINANCIAL),
        ("privileged", Outcome.REQUIRE_APPROVAL, 2, Rule.SAFETY_PRIVILEGED),
    ],
)
def test_safety_class_defaults(
    safety_class: str, outcome: Outcome, approvals: int, rule: Rule
) -> None:
    decision = decide(agent("elevated"), tool("t", category="memory", safety_class=safety_class))
    assert (decision.outcome, decision.required_approvals, decision.rule) == (
        outcome,
        approvals,
        rule,
    )


def test_privileged_on_allowed_list_still_needs_two_humans() -> None:
    decision = decide(
        agent("sandboxed", allowed=["rotate_keys"]),
        tool("rotate_keys", category="other", safety_class="privileged"),
    )
    assert decision.outcome is Outcome.REQUIRE_APPROVAL
    assert decision.required_approvals == 2


@pytest.mark.parametrize(
    ("action_type", "needs_approval"),
    [
        ("db:mutate", True),
        ("db:admin", True),
        ("db:query", False),
    ],
)
def test_restricted_requires_approval_for_database_writes(
    action_type: str, needs_approval: bool
) -> None:
    decision = decide(agent("restricted"), tool("db", category="database", action_type=action_type))
    assert (decision.outcome is Outcome.REQUIRE_APPROVAL) is needs_approval
    assert decision.required_approvals == (1 if needs_approval else 0)


def test_requires_approval_matches_whole_segments_only() -> None:
    from trust_app.policy import ActionTypeRegistry

    registry = ActionTypeRegistry(custom=("db:mutate_x", "dbx:query"))
    from trust_app.policy import SubConstraintOverrides, build_agent_policy

    overrides = SubConstraintOverrides.model_validate(
        {"requires_approval": ["db:mutate", "db"]}, context={"action_types": registry}
    )
    policy = build_agent_policy(name="a", level="elevated", overrides=overrides, workspace="/w")
    lookalike = tool("x", category="memory", action_type="db:mutate_x")
    # "db" is a domain shortcut: db:mutate_x is in domain db, so it does match ...
    assert decide(policy, lookalike).rule == Rule.REQUIRES_APPROVAL
    only_exact = build_agent_policy(
        name="a",
        level="elevated",
        overrides=SubConstraintOverrides(requires_approval=("db:mutate",)),
        workspace="/w",
    )
    # ... but the exact type db:mutate never matches db:mutate_x,
    assert decide(only_exact, lookalike).outcome is Outcome.ALLOW
    # and the shortcut "db" never matches domain "dbx".
    other_domain = tool("y", category="memory", action_type="dbx:query")
    assert decide(policy, other_domain).outcome is Outcome.ALLOW


def test_decision_as_dict_shape() -> None:
    decision = decide(agent("standard"), tool("read_file"))
    data = decision.as_dict()
    assert set(data) == {"outcome", "reason", "rule", "trace", "required_approvals"}
    assert data["outcome"] == "allow"
    assert isinstance(data["trace"], list)
    assert isinstance(decision, Decision)


def test_list_permitted_returns_l1_of_non_denied_tools_only() -> None:
    tools = [
        tool("read_file"),
        tool("deploy_prod", category="deployment"),
        tool("pay", category="memory", safety_class="financial"),
        tool("shell", category="terminal"),
        tool("secret", category="memory"),
    ]
    listed = list_permitted(agent("standard", denied=["secret"]), tools)
    assert [entry.name for entry in listed] == ["read_file", "pay", "shell"]
    assert listed[0].as_dict() == {
        "name": "read_file",
        "category": "file_system",
        "action_type": "code:write",
        "safety_class": "read",
        "summary": "read_file summary",
        "cost_tier": "low",
    }


def test_listing_ignores_arguments_but_calls_check_them() -> None:
    policy = agent("standard")
    read = tool("read_file")
    assert [e.name for e in list_permitted(policy, [read])] == ["read_file"]
    assert decide(policy, read, {"path": "/etc/passwd"}).outcome is Outcome.DENY


def test_arguments_must_be_a_mapping() -> None:
    decision = decide(agent("standard"), tool("read_file"), ["path"])  # type: ignore[arg-type]
    assert decision.rule == Rule.INVALID_ARGUMENTS
