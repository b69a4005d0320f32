"""Who may open a console page: the server checks the person's role on every request.

Anonymous visitors are sent to the login page; a signed-in person without one of
the page's roles, or anything presenting an agent token, gets 403 (API.md, "People").
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from common.roles import Role, has_any_role, org_roles_of, roles_of

EVERY_ROLE = frozenset(Role)
PageView = Callable[..., HttpResponseBase]


def page_for(*roles: Role, organisation_wide: bool = False) -> Callable[[PageView], PageView]:
    """Admit people holding any of `roles` (every role when none are named), in a team or
    organisation-wide; with `organisation_wide`, only those holding it organisation-wide
    (pages about what every team shares: tools, secrets, upstream servers). Which of a
    team's objects a page shows is the team scope's (``common.team_scope``)."""
    allowed = frozenset(roles) or EVERY_ROLE

    def wrap(view: PageView) -> PageView:
        @functools.wraps(view)
        def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if getattr(request, "bearer_kind", None) == "agent":
                raise PermissionDenied("console pages are for people; agent tokens are refused")
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not roles_of(request.user):
                raise PermissionDenied(
                    "your account has no role: ask an admin to add you to a group"
                )
            if not has_any_role(request.user, allowed):
                names = ", ".join(sorted(r.group for r in allowed))
                raise PermissionDenied(f"this page needs one of the roles: {names}")
            if organisation_wide and not org_roles_of(request.user) & allowed:
                names = ", ".join(sorted(r.group for r in allowed))
                raise PermissionDenied(
                    f"this page needs one of the roles organisation-wide: {names}; "
                    "a role in a team does not reach it"
                )
            return view(request, *args, **kwargs)

        return guarded

    return wrap


def is_admin(request: HttpRequest) -> bool:
    """True for admins (of a team or organisation-wide): the only people who may change
    what agents may do (which agents: the team scope's)."""
    return Role.ADMIN in roles_of(request.user)


def is_org_admin(request: HttpRequest) -> bool:
    """True for admins of the whole organisation: they change what every team shares."""
    return Role.ADMIN in org_roles_of(request.user)


def is_auditor(request: HttpRequest) -> bool:
    return Role.AUDITOR in roles_of(request.user)
