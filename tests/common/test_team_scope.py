"""The pure team scope: which teams' objects a person reaches with which roles."""

from __future__ import annotations

from common.roles import Role
from common.team_scope import DECIDE, EDIT_AGENTS, READ_AUDIT, TeamScope, team_scope


def test_an_organisation_wide_role_reaches_every_team_and_a_team_role_its_team() -> None:
    everywhere = team_scope(org_roles={Role.OPERATOR}, team_roles={}, needs=DECIDE)
    assert everywhere.everywhere and everywhere.admits("any-team")
    mine = team_scope(org_roles=(), team_roles={"a": {Role.OPERATOR}}, needs=DECIDE)
    assert mine.admits("a") and not mine.admits("b") and not mine.admits(None)


def test_a_role_that_does_not_give_the_capability_reaches_nothing() -> None:
    # An operator of team a decides there, edits nothing, reads no audit.
    roles = {"a": {Role.OPERATOR}}
    assert team_scope(org_roles=(), team_roles=roles, needs=EDIT_AGENTS).empty
    assert team_scope(org_roles=(), team_roles=roles, needs=READ_AUDIT).empty
    # An organisation-wide auditor reads every team's audit, decides nowhere.
    auditor = {Role.AUDITOR}
    assert team_scope(org_roles=auditor, team_roles={}, needs=READ_AUDIT).everywhere
    assert team_scope(org_roles=auditor, team_roles={}, needs=DECIDE).empty
    # Control: an admin of team a edits there, and decides there too.
    admin = {"a": {Role.ADMIN}}
    assert team_scope(org_roles=(), team_roles=admin, needs=EDIT_AGENTS) == TeamScope(
        everywhere=False, teams=frozenset({"a"})
    )
    assert team_scope(org_roles=(), team_roles=admin, needs=DECIDE).admits("a")
