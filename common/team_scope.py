"""PURE: which teams' objects a person may see or change, from the roles they hold.

A person holds roles organisation-wide (the Django groups) and per team
(memberships). A role held organisation-wide reaches every team; a role held in a
team reaches that team's agents and everything about them (their calls, approval
requests, audit events). Every read and write that is about an agent asks the scope
of the capability it needs; a scope that admits no team admits nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from common.roles import Role

# Capabilities, as the roles that give them (API.md, "People"): admins can do
# everything operators can.
DECIDE: Final = frozenset({Role.OPERATOR, Role.ADMIN})
READ_AGENTS: Final = frozenset({Role.OPERATOR, Role.ADMIN})
EDIT_AGENTS: Final = frozenset({Role.ADMIN})
READ_AUDIT: Final = frozenset({Role.ADMIN, Role.AUDITOR})


@dataclass(frozen=True)
class TeamScope:
    """Every team (``everywhere``), or only ``teams`` (ids as text)."""

    everywhere: bool
    teams: frozenset[str] = frozenset()

    def admits(self, team_id: object) -> bool:
        return self.everywhere or (team_id is not None and str(team_id) in self.teams)

    @property
    def empty(self) -> bool:
        return not self.everywhere and not self.teams


NOWHERE: Final = TeamScope(everywhere=False)
EVERYWHERE: Final = TeamScope(everywhere=True)


def team_scope(
    *,
    org_roles: Iterable[Role],
    team_roles: Mapping[str, Iterable[Role]],
    needs: frozenset[Role],
) -> TeamScope:
    """The teams where a person holds one of the roles ``needs`` names."""
    if set(org_roles) & needs:
        return EVERYWHERE
    teams = frozenset(str(team) for team, roles in team_roles.items() if set(roles) & needs)
    return TeamScope(everywhere=False, teams=teams)
