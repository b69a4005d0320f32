"""Rules and grants read arguments as the permission policy does, and fail closed.

Each attack (a spelling that hides what a path or host means, an omitted field)
sits beside its positive control (the plain spelling, the field given).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from approvals_app.policy import CallFacts, GrantView
from approvals_app.policy.readings import (
    host_value_readings,
    path_value_readings,
    url_value_readings,
)
from tests.approvals_app.test_policy import facts, rule, run
from trust_app.policy import Outcome

WORKSPACE = "/srv/agents/scout"
ROLES = {"path": "path", "url": "url", "host": "host"}


def call(
    arguments: dict[str, Any], *, autonomy: str = "locked", tool: str = "read_file"
) -> CallFacts:
    base = facts(tool, autonomy=autonomy, arguments=arguments)
    return replace(base, argument_roles=ROLES, workspace_roots=(WORKSPACE,))


def notes_grant() -> GrantView:
    return GrantView(id="g", tool="read_file", granted_by="olga", pattern={"path": "notes/*"})


@pytest.mark.parametrize(
    ("path", "covered"),
    [
        ("notes/a", True),
        ("./notes/a", True),
        (f"{WORKSPACE}/notes/a", True),
        ("notes/../.git/config", False),
        ("notes/../../other/notes/a", False),
        ("notes/%2e%2e/.git/config", False),
        ("notes\\..\\.git\\config", False),
        ("notes/a\x00", False),
        (["notes/a", "notes/b"], True),
        (["notes/a", "notes/../secret"], False),
        ([], False),
        (7, False),
    ],
)
def test_a_path_grant_covers_only_paths_that_stay_under_it(path: object, covered: bool) -> None:
    result = run(call({"path": path}), grants=[notes_grant()])
    assert (result.decision.rule == "grant:g") is covered, result.decision
    assert result.decision.allowed is covered


@pytest.mark.parametrize(
    ("url", "covered"),
    [
        ("https://api.example.com/v1/x", True),
        ("HTTPS://API.Example.COM./v1/x", True),
        ("https://api.example.com:443/v1/x", True),
        ("https://api.example.com/v1/../admin", False),
        ("https://api.example.com/v1/%2e%2e/admin", False),
        ("https://api.example.com@evil.example.org/v1/x", False),
        ("https://api.example.com:8443/v1/x", False),
        ("https://api.example.com\\@evil/v1/x", False),
    ],
)
def test_a_url_grant_reads_the_url_as_the_guard_does(url: str, covered: bool) -> None:
    grant = GrantView(
        id="g", tool="read_file", granted_by="o", pattern={"url": "https://api.example.com/v1/*"}
    )
    assert (run(call({"url": url}), grants=[grant]).decision.rule == "grant:g") is covered


def test_a_host_grant_reads_the_canonical_host() -> None:
    grant = GrantView(id="g", tool="read_file", granted_by="o", pattern={"host": "db.example.com"})
    assert run(call({"host": "DB.example.com.:5432"}), grants=[grant]).decision.allowed
    assert not run(call({"host": "db.example.com.evil"}), grants=[grant]).decision.allowed
    assert not run(call({"host": "[::1"}), grants=[grant]).decision.allowed


CONDITION = {"field": "path", "path": "secret/*"}


@pytest.mark.parametrize("disposition", ["deny", "require_approval"])
@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({}, "argument 'path' is missing"),
        ({"path": 12}, "argument 'path' cannot be judged (int value)"),
        ({"path": "secret/\x01"}, "argument 'path' cannot be judged (str value)"),
    ],
)
def test_a_restrictive_rule_applies_to_what_it_cannot_judge(
    disposition: str, arguments: dict[str, Any], why: str
) -> None:
    rules = [rule({"tool": "read_file", "arguments": [CONDITION]}, disposition, name="r")]
    result = run(call(arguments, autonomy="full"), approval={"rules": rules})
    assert result.decision.rule == "approval_rule:r"
    assert result.decision.outcome is not Outcome.ALLOW
    assert any(why in line and "fail closed" in line for line in result.decision.trace)
    # Positive control: a judged value outside the pattern is not caught by the rule.
    free = run(call({"path": "public/a"}, autonomy="full"), approval={"rules": rules})
    assert free.decision.allowed and free.decision.rule != "approval_rule:r"


@pytest.mark.parametrize(
    "path", ["secret/a", "./secret/a", "public/../secret/a", f"{WORKSPACE}/secret/a", "secret%2fa"]
)
def test_a_restrictive_rule_catches_every_spelling(path: str) -> None:
    rules = [rule({"tool": "read_file", "arguments": [CONDITION]}, "deny", name="r")]
    assert run(call({"path": path}, autonomy="full"), approval={"rules": rules}).decision.denied


@pytest.mark.parametrize("disposition", ["auto_approve", "budget"])
def test_a_permissive_rule_never_applies_to_what_it_cannot_judge(disposition: str) -> None:
    extra = {"budget": {"limit": 5, "period": "day"}} if disposition == "budget" else {}
    condition = {"field": "path", "path": "notes/*"}
    rules = [rule({"tool": "read_file", "arguments": [condition]}, disposition, name="p", **extra)]
    missing = run(call({}, autonomy="supervised"), approval={"rules": rules})
    assert missing.decision.outcome is Outcome.REQUIRE_APPROVAL
    assert missing.decision.rule != "approval_rule:p"
    assert any(
        "approval_rule:p: not applied" in line and "argument 'path' is missing" in line
        for line in missing.decision.trace
    )
    escaped = run(call({"path": "notes/../x"}, autonomy="supervised"), approval={"rules": rules})
    assert escaped.decision.outcome is Outcome.REQUIRE_APPROVAL
    # Positive control: the same rule approves a path that stays under notes/.
    given = run(call({"path": "notes/a"}, autonomy="supervised"), approval={"rules": rules})
    assert given.decision.allowed and given.decision.rule == "approval_rule:p"


def test_a_rate_limit_counts_a_call_it_cannot_judge() -> None:
    from approvals_app.policy import rate_windows
    from tests.approvals_app.test_policy import config

    limit = {"max_calls": 1, "window_seconds": 60, "per": "agent",
             "match": {"tool": "read_file", "arguments": [CONDITION]}}  # fmt: skip
    approval = config({"rate_limits": [limit]}).approval
    assert rate_windows(call({}), "a1", approval)
    assert rate_windows(call({"path": "secret/x"}), "a1", approval)
    assert not rate_windows(call({"path": "public/x"}), "a1", approval)


def test_readings() -> None:
    roots = (WORKSPACE,)
    assert path_value_readings("a/./b/../c", roots) == {"a/c"}
    assert path_value_readings(f"{WORKSPACE}", roots) == {"."}
    assert path_value_readings("/etc/../etc/passwd", roots) == {"/etc/passwd"}
    assert path_value_readings("a%2f..%2f..%2fx", roots) == {"a%2f..%2f..%2fx", "/srv/agents/x"}
    assert path_value_readings("~/x", roots) is None
    assert host_value_readings("https://u@Example.COM.:8080/x") == {"example.com"}
    assert host_value_readings("0x7f.1") == {"127.0.0.1"}
    assert host_value_readings("ftp://example.com/") is None
    assert url_value_readings("https://Example.com:443") == {"https://example.com/"}
