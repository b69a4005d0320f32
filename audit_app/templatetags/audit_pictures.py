"""``{% audit_event_pictures event as pictures %}``: the pictures an audit row names, each
checked against the file there now (shown by reference; their bytes have their own view)."""

from __future__ import annotations

from django import template

from audit_app.models import AuditEvent
from audit_app.selectors.pictures import EventPicture, event_pictures

register = template.Library()


@register.simple_tag
def audit_event_pictures(event: AuditEvent) -> list[EventPicture]:
    """The pictures of ``event`` and whether each is still the one recorded."""
    return event_pictures(event)
