"""The pictures an audit row names (screenshots, diffs, charts, designs), for the pages
that show that row, to the people who may read it."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse

from audit_app.scope import audit_event_readable
from audit_app.selectors.events import audit_event_get
from audit_app.selectors.pictures import event_picture_bytes
from common.page_access import page_for
from common.roles import Role
from tools_app.builtin.pictures import picture_index, picture_response_headers


@page_for(Role.AUDITOR, Role.ADMIN)
def audit_event_picture(request: HttpRequest, event_id: int) -> HttpResponse:
    """Picture ``?n=`` (the first without it) of event ``event_id``, to the people who may
    read that event, only as the bytes its audit row recorded (404 otherwise: missing,
    changed or not theirs)."""
    event = audit_event_get(event_id)
    if event is None or not audit_event_readable(request.user, event):
        raise Http404(f"no audit event #{event_id} among your teams' events")
    index = picture_index(request.GET.get("n"))
    check = None if index is None else event_picture_bytes(event, index)
    if check is None:
        raise Http404(f"audit event #{event_id} has no picture {index} that matches its record")
    response = HttpResponse(check.data)
    for name, value in picture_response_headers(check).items():
        response[name] = value
    return response
