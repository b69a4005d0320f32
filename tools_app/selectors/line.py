"""Where a waiting call stands in its agent's line."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from tools_app.admission.line import place_in_line
from tools_app.models import Invocation, InvocationStatus


def queue_place(invocation: Invocation) -> dict[str, int] | None:
    """``{"position", "ahead_for_agent"}`` for a call waiting its turn, else None."""
    if invocation.status != InvocationStatus.QUEUED or not invocation.held:
        return None
    before = Q(created_at__lt=invocation.created_at) | Q(
        created_at=invocation.created_at, id__lt=invocation.id
    )
    counts: dict[str, Any] = Invocation.objects.filter(
        agent_id=invocation.agent_id,
        status__in=(InvocationStatus.QUEUED, InvocationStatus.RUNNING),
    ).aggregate(
        in_flight=Count("id", filter=Q(held=False)),
        waiting_before=Count("id", filter=Q(held=True) & before),
    )
    place = place_in_line(waiting_before=counts["waiting_before"], in_flight=counts["in_flight"])
    return {"position": place.position, "ahead_for_agent": place.ahead_for_agent}
