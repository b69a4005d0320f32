"""Thin Celery tasks: deliver one notification; the sweep for due, expiring and digested ones."""

from __future__ import annotations

from celery import shared_task

from notifications_app.services import DELIVER_TASK


@shared_task(name=DELIVER_TASK)
def deliver_notification(notification_id: int) -> str:
    from notifications_app.services import notification_deliver

    return notification_deliver(notification_id=notification_id)


@shared_task(name="notifications_app.sweep_notifications", quiet=True)
def sweep_notifications() -> int:
    """Queue ``expiring`` for requests about to run out, send each burst whose window
    closed as one digest, and send due retries."""
    from notifications_app.services import (
        notifications_deliver_due,
        notifications_digests_flush,
        notifications_expiring_due,
    )

    notifications_expiring_due()
    notifications_digests_flush()
    return notifications_deliver_due()
