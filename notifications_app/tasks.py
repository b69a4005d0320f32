"""Thin Celery tasks: deliver one notification; the sweeps for due and expiring ones."""

from __future__ import annotations

from celery import shared_task

from notifications_app.services import DELIVER_TASK


@shared_task(name=DELIVER_TASK)
def deliver_notification(notification_id: int) -> str:
    from notifications_app.services import notification_deliver

    return notification_deliver(notification_id=notification_id)


@shared_task(name="notifications_app.sweep_notifications", quiet=True)
def sweep_notifications() -> int:
    """Send due retries, and queue ``expiring`` for requests about to run out."""
    from notifications_app.services import notifications_deliver_due, notifications_expiring_due

    notifications_expiring_due()
    return notifications_deliver_due()
