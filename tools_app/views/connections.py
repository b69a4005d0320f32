"""The connections page (organisation-wide admins): what each configured external API
lets agents do, and who may. Connections live in the config file, so it only reads."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from common.page_access import page_for
from common.roles import Role
from tools_app.selectors.connections import connection_listing


@page_for(Role.ADMIN, organisation_wide=True)
def connection_index(request: HttpRequest) -> HttpResponse:
    """Host, auth scheme and secret name (never its value), operations with their class,
    limits and granted agents of every connection."""
    return render(request, "tools/connections.html", {"connections": connection_listing()})
