"""Pages of the site itself (the app pages live in their apps)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from common.roles import roles_of
from synthorg_site.health import health_report


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """The landing page for every signed-in person; people without a role get 403."""
    if not roles_of(request.user):
        raise PermissionDenied("your account has no role: ask an admin to add you to a group")
    return render(request, "dashboard.html", {"health": health_report()})
