"""A picture an approval card shows, to the people who may decide that request."""

from __future__ import annotations

import uuid

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from approvals_app.live import decider_scope
from approvals_app.selectors.cards import call_pictures
from approvals_app.selectors.requests import approval_request
from common.page_access import page_for
from common.roles import Role
from tools_app.builtin.pictures import picture_index, picture_response_headers


@require_GET
@page_for(Role.OPERATOR, Role.ADMIN)
def card_picture(request: HttpRequest, request_id: uuid.UUID) -> HttpResponse:
    """Picture ``?n=`` (the first without it) of the request's card, only while it is the
    recorded picture (404 otherwise: not theirs, none, changed, a link)."""
    found = approval_request(request_id, scope=decider_scope(request.user))
    if found is None:
        raise Http404("no such approval request")
    pictures = call_pictures(found.invocation)
    index = picture_index(request.GET.get("n"))
    if index is None or index >= len(pictures) or not pictures[index].shown:
        raise Http404(f"the card has no picture {index} that matches its record")
    check = pictures[index].check
    response = HttpResponse(check.data)
    for name, value in picture_response_headers(check).items():
        response[name] = value
    return response
