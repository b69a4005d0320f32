"""A design tool's picture, for the audit event page that names it."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse

from audit_app.scope import audit_event_readable
from audit_app.selectors.events import audit_event_get
from audit_app.selectors.pictures import event_picture_bytes
from common.page_access import page_for
from common.roles import Role


@page_for(Role.AUDITOR, Role.ADMIN)
def audit_event_picture(request: HttpRequest, event_id: int) -> HttpResponse:
    """The picture of event ``event_id``, to the people who may read that event, only as
    the bytes its audit row recorded (404 otherwise: missing, changed or not theirs)."""
    event = audit_event_get(event_id)
    if event is None or not audit_event_readable(request.user, event):
        raise Http404(f"no audit event #{event_id} among your teams' events")
    picture = event_picture_bytes(event)
    if picture is None:
        raise Http404(f"audit event #{event_id} has no picture that matches its record")
    response = HttpResponse(picture.data, content_type=picture.media_type)
    # Served as a picture only: never sniffed as something else, never a document.
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Content-Disposition"] = "inline"
    response["Cache-Control"] = "private, no-store"
    return response
