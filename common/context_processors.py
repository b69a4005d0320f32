"""Template context shared by every page of the base layout."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from common.roles import Role, primary_role, roles_of


def person(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    roles = roles_of(user)
    return {
        "person_role": primary_role(user),
        "person_roles": roles,
        "can_decide": bool(roles & {Role.OPERATOR, Role.ADMIN}),
        "can_admin": Role.ADMIN in roles,
        "can_audit": bool(roles & {Role.ADMIN, Role.AUDITOR}),
    }
