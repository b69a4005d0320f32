"""Notification: one message for one channel about one approval event (the outbox row)."""

from __future__ import annotations

from django.db import models


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"
    # Counted in a digest: another row (``digest_carrier``) carries the one message.
    DIGESTED = "digested", "In a digest"


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
    # Events alike enough to be told together: the same channel, event, agent and risk
    # tier (``notifications_app.digest.batch_key``).
    batch_key = models.CharField(max_length=200, blank=True, default="", db_default="")
    # Held for the burst's digest; the sweep sends the held rows of a key as one message.
    held = models.BooleanField(default=False, db_default=False)
    digest_carrier = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="digested"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "approval_id", "event"], name="one_notification_per_event"
            )
        ]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"]),
            models.Index(fields=["channel", "batch_key", "created_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.approval_id} → {self.channel} ({self.status})"


class PushSubscription(models.Model):
    """One browser of one person that asked for web push (the browser's own keys).

    The endpoint is the push service's URL for that browser; the keys encrypt what is
    sent so that only the browser reads it. Removed when the person unsubscribes or
    the push service says the subscription is gone.
    """

    person = models.ForeignKey(
        "auth.User", on_delete=models.CASCADE, related_name="push_subscriptions"
    )
    endpoint = models.URLField(max_length=1000, unique=True)
    p256dh = models.CharField(max_length=200)
    auth = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"push subscription of {self.person_id}"
