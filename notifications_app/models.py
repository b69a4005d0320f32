"""Notification: one message for one channel about one approval event (the outbox row)."""

from __future__ import annotations

from django.db import models


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"


class Notification(models.Model):
    """Written in the event's own transaction; a worker sends it, retrying with backoff.

    ``(channel, approval_id, event)`` is unique, so an event sends once per channel
    however many nodes or sweeps notice it.
    """

    channel = models.CharField(max_length=64)
    channel_type = models.CharField(max_length=16)
    event = models.CharField(max_length=16)
    approval_id = models.UUIDField(db_index=True)
    facts = models.JSONField()
    status = models.CharField(
        max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    # When a worker may next try: after a failure's backoff, or after a worker's lease.
    next_attempt_at = models.DateTimeField(db_index=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "approval_id", "event"], name="one_notification_per_event"
            )
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"{self.event} {self.approval_id} → {self.channel} ({self.status})"
