"""The whole call of an approval request, for every person who may decide it.

A card in the inbox is bounded (it travels in live frames); this page has no bound:
every argument in full, the whole diff, the raw JSON. ``?format=json`` answers the
arguments themselves as a download. Operators and admins only, as the inbox.
"""

from __future__ import annotations

import json
import uuid

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from approvals_app.live import decider_scope
from approvals_app.selectors.cards import shown_arguments, whole_card_view
from approvals_app.selectors.requests import approval_request
from common.page_access import page_for
from common.roles import Role


@require_GET
@page_for(Role.OPERATOR, Role.ADMIN)
def whole_call(request: HttpRequest, request_id: uuid.UUID) -> HttpResponse:
    """The request's call with nothing cut (``?format=json``: its arguments, as a file)."""
    found = approval_request(request_id, scope=decider_scope(request.user))
    if found is None:
        raise Http404("no such approval request")
    invocation = found.invocation
    if request.GET.get("format") == "json":
        body = json.dumps(shown_arguments(invocation), ensure_ascii=False, indent=2)
        answer = HttpResponse(body, content_type="application/json; charset=utf-8")
        answer["Content-Disposition"] = (
            f'attachment; filename="{invocation.tool}-{invocation.id}-arguments.json"'
        )
        return answer
    context = {"approval": found, "view": whole_card_view(found), "whole": True}
    return render(request, "approvals/call.html", context)
