"""The three kinds of people who use the console: organisation-wide as Django groups,
per team as memberships (``trust_app.models.TeamMembership``, read here through the
person's ``team_memberships`` relation so this module needs no app)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Role(StrEnum):
    OPERATOR = "operator"
    ADMIN = "admin"
    AUDITOR = "auditor"

    @property
    def group(self) -> str:
        return f"{self.value}s"


ROLE_NAMES = tuple(role.value for role in Role)
# Admins can do everything operators can (API.md, "People").
ROLES_THAT_DECIDE = frozenset({Role.OPERATOR, Role.ADMIN})
ROLES_THAT_READ_AUDIT = frozenset({Role.ADMIN, Role.AUDITOR})


def _a_person(user: Any) -> bool:
    """A signed-in person (an agent's request carries its principal, which holds no role)."""
    return (
        user is not None
        and getattr(user, "is_authenticated", False)
        and not getattr(user, "is_agent", False)
    )


def org_roles_of(user: Any) -> frozenset[Role]:
    """The roles a signed-in person holds organisation-wide (their groups)."""
    if not _a_person(user):
        return frozenset()
    cached = getattr(user, "_synthorg_org_roles", None)
    if cached is not None:
        return cached
    names = set(user.groups.values_list("name", flat=True))
    roles = frozenset(role for role in Role if role.group in names)
    user._synthorg_org_roles = roles
    return roles


def team_roles_of(user: Any) -> dict[str, frozenset[Role]]:
    """The roles a signed-in person holds per team: team id (text) to roles."""
    if not _a_person(user):
        return {}
    cached = getattr(user, "_synthorg_team_roles", None)
    if cached is not None:
        return cached
    memberships = getattr(user, "team_memberships", None)
    found: dict[str, set[Role]] = {}
    if memberships is not None:
        for team_id, role in memberships.values_list("team_id", "role"):
            if role in ROLE_NAMES:
                found.setdefault(str(team_id), set()).add(Role(role))
    roles = {team: frozenset(held) for team, held in found.items()}
    user._synthorg_team_roles = roles
    return roles


def roles_of(user: Any) -> frozenset[Role]:
    """The roles a signed-in person holds anywhere, organisation-wide or in a team (none
    for anonymous users and agents): what pages admit; what objects they show is the
    team scope's (``common.team_scope``)."""
    if not _a_person(user):
        return frozenset()
    cached = getattr(user, "_synthorg_roles", None)
    if cached is not None:
        return cached
    roles = org_roles_of(user).union(*team_roles_of(user).values())
    user._synthorg_roles = roles
    return roles


def forget_roles(user: Any) -> None:
    """Drop the roles read for ``user``, after a writer changed them."""
    for name in ("_synthorg_roles", "_synthorg_org_roles", "_synthorg_team_roles"):
        if hasattr(user, name):
            delattr(user, name)


def primary_role(user: Any) -> Role | None:
    """The role shown next to a person's name: admin over operator over auditor."""
    roles = roles_of(user)
    for role in (Role.ADMIN, Role.OPERATOR, Role.AUDITOR):
        if role in roles:
            return role
    return None


def has_any_role(user: Any, allowed: frozenset[Role] | set[Role]) -> bool:
    return bool(roles_of(user) & set(allowed))
