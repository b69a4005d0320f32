"""``{% audit_event_picture event as picture %}``: the picture an audit row names, if any."""

from __future__ import annotations

from django import template

from audit_app.models import AuditEvent
from audit_app.selectors.pictures import EventPicture, event_picture

register = template.Library()


@register.simple_tag
def audit_event_picture(event: AuditEvent) -> EventPicture | None:
    """Where ``event``'s picture is, by reference (its bytes are served by their own view)."""
    return event_picture(event)
