"""Pages of the site itself (the app pages live in their apps)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from approvals_app.live import can_decide, decider_scope
from common.page_access import page_for
from common.roles import Role
from common.team_scope import TeamScope
from synthorg_site.dashboard import chart_tables, dashboard_metrics
from trust_app.selectors.teams import person_scope


def dashboard_scope(user: Any) -> TeamScope:
    """Whose waiting requests the dashboard counts: those the person decides (as the
    navigation's badge does), else those of every team where they hold a role."""
    if can_decide(user):
        return decider_scope(user)
    return person_scope(user, frozenset(Role))


@page_for()
def dashboard(request: HttpRequest) -> HttpResponse:
    """The landing page for every signed-in person with a role; htmx polls its live part."""
    metrics = dashboard_metrics(dashboard_scope(request.user))
    context = {"metrics": metrics, "health": metrics["health"], "tables": chart_tables(metrics)}
    if getattr(request, "htmx", False):
        # The live part, and the charts' tables replaced beside it (out of band).
        return render(request, "dashboard.html#live", {**context, "oob": True})
    return render(request, "dashboard.html", context)
