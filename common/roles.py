"""The three kinds of people who use the console, as Django groups."""

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


def roles_of(user: Any) -> frozenset[Role]:
    """The roles a signed-in person holds (none for anonymous users and agents)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return frozenset()
    cached = getattr(user, "_synthorg_roles", None)
    if cached is not None:
        return cached
    names = set(user.groups.values_list("name", flat=True))
    roles = frozenset(role for role in Role if role.group in names)
    user._synthorg_roles = roles
    return roles


def primary_role(user: Any) -> Role | None:
    """The role shown next to a person's name: admin over operator over auditor."""
    roles = roles_of(user)
    for role in (Role.ADMIN, Role.OPERATOR, Role.AUDITOR):
        if role in roles:
            return role
    return None


def has_any_role(user: Any, allowed: frozenset[Role] | set[Role]) -> bool:
    return bool(roles_of(user) & set(allowed))
