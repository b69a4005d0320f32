"""Pages of the site itself (the app pages live in their apps)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from common.page_access import page_for
from synthorg_site.dashboard import chart_tables, dashboard_metrics


@page_for()
def dashboard(request: HttpRequest) -> HttpResponse:
    """The landing page for every signed-in person with a role; htmx polls its live part."""
    metrics = dashboard_metrics()
    context = {"metrics": metrics, "health": metrics["health"], "tables": chart_tables(metrics)}
    if getattr(request, "htmx", False):
        # The live part, and the charts' tables replaced beside it (out of band).
        return render(request, "dashboard.html#live", {**context, "oob": True})
    return render(request, "dashboard.html", context)
