"""My decisions: an operator sees what they approved or denied and how each call ended.

Operators have no access to the audit log (API.md); this page shows them only their
own decisions, read from the approvals they made, never other people's events.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from approvals_app.selectors.decisions import decisions_with_outcomes
from audit_app.selectors.events import cursor_parse
from common.errors import InvalidArgumentError
from common.page_access import page_for
from common.roles import Role

DECISIONS_PAGE_SIZE = 50


@require_GET
@page_for(Role.OPERATOR, Role.ADMIN)
def my_decisions(request: HttpRequest) -> HttpResponse:
    problem = ""
    try:
        below = cursor_parse(request.GET.get("cursor"))
    except InvalidArgumentError as exc:
        below, problem = None, exc.message
    rows, next_cursor = decisions_with_outcomes(
        person=request.user, below=below, size=DECISIONS_PAGE_SIZE
    )
    return render(
        request,
        "approvals/decisions.html",
        {"rows": rows, "next_cursor": next_cursor, "first_page": below is None, "problem": problem},
        status=400 if problem else 200,
    )
