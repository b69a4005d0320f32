"""What the health page says about notifications."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count
from django.utils import timezone

from notifications_app.models import DeliveryStatus, Notification

RECENT = timedelta(hours=24)


def notification_health() -> tuple[bool, str]:
    """(ok, detail): ok while nothing failed in the last day and nothing is overdue."""
    now = timezone.now()
    failed = list(
        Notification.objects.filter(status=DeliveryStatus.FAILED, created_at__gte=now - RECENT)
        .values("channel")
        .annotate(count=Count("id"))
        .order_by("channel")
    )
    retrying = Notification.objects.filter(status=DeliveryStatus.PENDING, attempts__gt=0)
    problems = [f"{row['channel']}: {row['count']} failed in 24 h" for row in failed]
    latest = retrying.order_by("-next_attempt_at").first()
    if latest is not None:
        problems.append(
            f"{retrying.count()} retrying; last error on {latest.channel}: {latest.last_error}"
        )
    if problems:
        return False, "; ".join(problems)[:1000]
    sent = Notification.objects.filter(status=DeliveryStatus.SENT, created_at__gte=now - RECENT)
    return True, f"{sent.count()} sent in 24 h, none failing"
