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

from common.roles import Role, has_any_role, roles_of

EVERY_ROLE = frozenset(Role)
PageView = Callable[..., HttpResponseBase]


def page_for(*roles: Role) -> Callable[[PageView], PageView]:
    """Admit people holding any of `roles` (every role when none are named)."""
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
            return view(request, *args, **kwargs)

        return guarded

    return wrap


def is_admin(request: HttpRequest) -> bool:
    """True for admins: the only people who may change what agents and tools may do."""
    return Role.ADMIN in roles_of(request.user)


def is_auditor(request: HttpRequest) -> bool:
    return Role.AUDITOR in roles_of(request.user)
