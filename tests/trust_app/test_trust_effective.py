"""The effective level: the stricter of the configured ceiling and the earned level."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.vocabulary.levels import FileSystemScope, GitAccess, NetworkMode, TerminalAccess
from tests.trust_app.policy.factories import CATEGORY_ACTION, WORKSPACE, tool
from trust_app.policy import (
    ALL_CATEGORIES,
    DEFAULT_LEVELS,
    AccessLevelUnknownError,
    AgentPolicy,
    SubConstraintOverrides,
    ToolCategory,
    build_agent_policy,
    decide,
    list_permitted,
)
from trust_app.policy.effective import stricter

PROJECT = "/srv/agents/alpha"
ORDERED = ("sandboxed", "restricted", "standard", "elevated")
VCS_ACTIONS = ("vcs:read", "vcs:commit", "vcs:push", "vcs:branch", "vcs:clone")


def _agent(level: str, earned: dict[str, str] | None = None, **overrides: Any) -> AgentPolicy:
    return build_agent_policy(
        name="alpha",
        level=level,
        overrides=SubConstraintOverrides(**overrides) if overrides else None,
        workspace=WORKSPACE,
        project_root=PROJECT,
        earned=earned,
    )


def _tools() -> list[Any]:
    views = [tool(f"t_{c}", category=c) for c in ALL_CATEGORIES]
    views += [tool(f"git_{a}", category="version_control", action_type=a) for a in VCS_ACTIONS]
    views.append(tool("deploy", category="terminal", action_type="deploy:production"))
    return views


ARGUMENTS: dict[str, dict[str, object]] = {
    "file_system": {"path": "/etc/passwd"},
    "web": {"url": "https://example.com/"},
    "terminal": {"command": "rm -rf /"},
}


@settings(max_examples=150, deadline=None)
@given(
    ceiling=st.sampled_from(ORDERED),
    earned=st.dictionaries(st.sampled_from(ALL_CATEGORIES), st.sampled_from(ORDERED)),
    network=st.sampled_from([None, *NetworkMode]),
    terminal=st.sampled_from([None, *TerminalAccess]),
    git=st.sampled_from([None, *GitAccess]),
    file_system=st.sampled_from([None, *FileSystemScope]),
)
def test_effective_level_never_exceeds_the_ceiling(
    ceiling: str,
    earned: dict[str, str],
    network: NetworkMode | None,
    terminal: TerminalAccess | None,
    git: GitAccess | None,
    file_system: FileSystemScope | None,
) -> None:
    overrides: dict[str, Any] = {
        k: v
        for k, v in {
            "network": network,
            "terminal": terminal,
            "git": git,
            "file_system": file_system,
        }.items()
        if v is not None
    }
    limited = _agent(ceiling, earned, **overrides)
    configured = _agent(ceiling, **overrides)
    for view in _tools():
        for arguments in (None, ARGUMENTS.get(view.category, {})):
            mine = decide(limited, view, arguments)
            theirs = decide(configured, view, arguments)
            if not mine.denied:
                assert not theirs.denied, (view.name, mine.trace, theirs.trace)
                assert mine.required_approvals >= theirs.required_approvals
    listed = {t.name for t in list_permitted(limited, _tools())}
    assert listed <= {t.name for t in list_permitted(configured, _tools())}


@pytest.mark.parametrize("ceiling", ORDERED)
@pytest.mark.parametrize("earned", ORDERED)
def test_stricter_of_two_levels_is_within_both(ceiling: str, earned: str) -> None:
    both = stricter(DEFAULT_LEVELS[earned], DEFAULT_LEVELS[ceiling])
    assert set(both.categories) <= set(DEFAULT_LEVELS[ceiling].categories)
    assert set(both.categories) <= set(DEFAULT_LEVELS[earned].categories)
    assert both.deployment <= DEFAULT_LEVELS[ceiling].deployment


def test_earned_files_lower_files_only() -> None:
    policy = _agent("standard", {"file_system": "sandboxed", "terminal": "restricted"})
    outside = {"path": "/srv/agents/alpha/other.txt"}
    denied = decide(policy, tool("read_file", category="file_system"), outside)
    assert denied.denied
    assert "earned level sandboxed" in denied.reason
    assert any(line.startswith("trust: file_system") for line in denied.trace)
    assert not decide(_agent("standard"), tool("read_file"), outside).denied
    assert decide(policy, tool("sh", category="terminal"), {"command": "ls"}).denied
    assert not decide(policy, tool("fetch", category="web"), {"url": "https://a.example/"}).denied


def test_earning_more_than_the_ceiling_grants_nothing() -> None:
    policy = _agent("restricted", dict.fromkeys(ALL_CATEGORIES, "elevated"))
    assert policy.category_policies == {}
    assert decide(policy, tool("sh", category="terminal"), {"command": "ls"}).denied
    assert decide(policy, tool("ship", category="deployment")).denied


def test_earned_at_the_ceiling_changes_nothing() -> None:
    policy = _agent("standard", dict.fromkeys(ALL_CATEGORIES, "standard"))
    plain = _agent("standard")
    for view in _tools():
        assert decide(policy, view).outcome == decide(plain, view).outcome


def test_custom_level_is_outside_the_order() -> None:
    policy = _agent("custom", {"file_system": "sandboxed"})
    assert policy.category_policies == {}


def test_unknown_earned_level_is_refused() -> None:
    with pytest.raises(AccessLevelUnknownError):
        _agent("standard", {"file_system": "godlike"})


def test_admin_tightening_still_applies_at_the_earned_level() -> None:
    policy = _agent("standard", {"web": "restricted"}, network="none")
    assert policy.for_category("web").constraints.network is NetworkMode.NONE
    assert decide(policy, tool("fetch", category="web"), {"url": "https://a.example/"}).denied


def test_git_modes_neither_containing_the_other_keep_the_ceilings() -> None:
    both = stricter(DEFAULT_LEVELS["sandboxed"], DEFAULT_LEVELS["restricted"])
    assert both.git is GitAccess.READ_AND_BRANCH
    policy = _agent("restricted", {"version_control": "sandboxed"})
    commit = tool("commit", category="version_control", action_type="vcs:commit")
    assert decide(policy, commit).denied


def test_scoped_policies_are_shared_per_level() -> None:
    policy = _agent("elevated", {"web": "restricted", "database": "restricted"})
    assert policy.for_category("web") is policy.for_category("database")
    assert policy.for_category(ToolCategory.MEMORY) is policy
    assert CATEGORY_ACTION  # the factories' table is the one the policy tests use
