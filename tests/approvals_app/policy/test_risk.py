"""Risk from what a call does, with its reasons (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from approvals_app.policy.matching import CallFacts
from approvals_app.policy.risk import AgentHabits, RiskInput, TargetState, effect_risk

ROOTS = ("/srv/ws/agent",)
SEEN = AgentHabits(
    calls=12,
    tools=frozenset({"shell_command", "write_file", "http_request", "db_mutate"}),
    hosts=frozenset({"docs.example.org"}),
    folders=frozenset({"notes", "src"}),
)


def facts(
    tool: str,
    arguments: dict[str, Any],
    *,
    safety: str = "write",
    action: str = "code:write",
    roles: dict[str, str] | None = None,
) -> CallFacts:
    return CallFacts("a1", "locked", tool, "x", action, safety, arguments, roles or {}, ROOTS)


def risk(call: CallFacts, habits: AgentHabits = SEEN, **more: Any) -> tuple[str, list[str]]:
    found = effect_risk(RiskInput(call, habits, **more))
    return found.tier, [reason.text for reason in found.reasons]


def shell(*argv: str) -> CallFacts:
    return facts("shell_command", {"argv": list(argv)}, roles={"cwd": "path"})


def test_du_is_low_whatever_the_policy_asks() -> None:
    tier, reasons = risk(shell("du", "-sh", "."))
    assert (tier, reasons) == ("low", ["du only reads"])
    # Even a fresh agent's first call that only reads stays low, and says why it is new.
    assert risk(shell("du", "-sh", "."), AgentHabits())[0] == "low"


def test_a_get_to_a_host_the_agent_used_is_low_and_a_new_host_is_a_reason() -> None:
    url = {"url": "https://docs.example.org/guide"}
    get = facts("http_request", url, safety="network", action="web:read", roles={"url": "url"})
    assert risk(get) == ("low", ["GET from docs.example.org, which this agent has reached before"])
    new = facts("http_request", {"url": "https://other.example.org/"}, safety="network",
                action="web:read", roles={"url": "url"})  # fmt: skip
    assert risk(new) == ("medium", ["first request of this agent to other.example.org"])


def test_data_leaving_to_a_new_host_is_high() -> None:
    sent = {"url": "https://collector.example.invalid/", "method": "POST", "body": "x" * 2048}
    post = facts("http_request", sent, safety="network", roles={"url": "url"})
    tier, reasons = risk(post)
    assert tier == "high" and "POST sends 2,048 bytes to collector.example.invalid" in reasons[0]


@pytest.mark.parametrize(
    ("query", "tier", "words"),
    [
        ("delete from orders where id = 3", "high", "DELETE rows of orders"),
        ("DELETE FROM orders", "critical", "DELETE every row of orders: no WHERE"),
        ("update orders set paid = true", "critical", "UPDATE every row of orders"),
        ("drop table orders", "critical", "DROP of orders"),
        ("select * from orders where id = 3", "low", "SELECT of orders: reads only"),
        ("select 1; -- delete from orders\n", "low", "SELECT"),
    ],
)
def test_sql_is_judged_by_what_each_statement_does(query: str, tier: str, words: str) -> None:
    found_tier, reasons = risk(facts("db_mutate", {"connection": "main", "query": query}))
    assert found_tier == tier and words in reasons[0]


def test_writes_are_judged_by_their_resolved_target() -> None:
    new = facts("write_file", {"path": "notes/a.md", "content": "x"}, roles={"path": "path"})
    assert risk(new, target=TargetState(exists=False)) == ("low", ["creates notes/a.md"])
    over = facts("write_file", {"path": "notes/a.md", "content": "x"}, roles={"path": "path"})
    assert risk(over, target=TargetState(exists=True, size=4096))[0] == "medium"
    sneaky = "notes.txt/" + "./" * 160 + "../.git/config"
    write = facts("write_file", {"path": sneaky, "content": "x"}, roles={"path": "path"})
    tier, reasons = risk(write, target=TargetState(exists=True))
    assert tier == "high" and reasons[0].startswith("changes .git/config: git's configuration")
    assert "first time this agent changes under .git/" in reasons
    system = facts("write_file", {"path": "/etc/cron.d/x", "content": "x"}, roles={"path": "path"})
    assert risk(system)[0] == "critical"


def test_deletes_and_destructive_commands_are_high_or_critical() -> None:
    delete = facts("delete_file", {"path": "src/old.py"}, action="code:delete",
                   roles={"path": "path"})  # fmt: skip
    tier, reasons = risk(delete)
    assert (tier, reasons[0]) == ("high", "deletes src/old.py")
    assert risk(shell("rm", "-rf", "."))[0] == "critical"
    assert risk(shell("git", "push", "--force", "origin", "main"))[0] == "critical"
    tier, reasons = risk(shell("git", "commit", "-m", "x", "--amend", "--author=Mallory <m@x>"))
    assert tier == "medium" and any("another author" in reason for reason in reasons)
    # Most serious first: the redirection writes a file, the programs only read.
    assert risk(facts("shell_command", {"command": "ls | wc -l > count.txt"})) == (
        "medium",
        ["writes its output into count.txt", "ls only reads", "wc only reads"],
    )


def test_the_first_use_of_a_tool_is_a_reason_and_an_admins_rule_tier_is_never_lowered() -> None:
    call = facts("memory_store", {"key": "k", "value": "v"})
    tier, reasons = risk(call)
    assert tier == "medium" and "first use of memory_store by this agent" in reasons
    floor = effect_risk(RiskInput(shell("du", "-sh", "."), SEEN, rule_tier="high", rule="r1"))
    assert floor.tier == "high" and floor.reasons[0].text == "rule r1 classes these calls high"


def test_a_far_reaching_action_type_counts_only_where_the_effect_is_not_read() -> None:
    get = facts("http_request", {"url": "https://docs.example.org/"}, safety="network",
                action="comms:external", roles={"url": "url"})  # fmt: skip
    assert risk(get)[0] == "low"
    deploy = facts("ci_trigger", {"pipeline": "release"}, action="deploy:production")
    tier, reasons = risk(deploy)
    assert (
        tier == "high" and "deploy:production: its effect reaches beyond the workspace" in reasons
    )
