"""The audit log: append-only, hash-chained, readable without the rows it mentions."""

from __future__ import annotations

from typing import Any

from django.db import models


class ActorType(models.TextChoices):
    AGENT = "agent"
    PERSON = "person"
    SYSTEM = "system"


class AuditEvent(models.Model):
    """One thing that happened. Names are denormalised so the row outlives what it names."""

    id = models.BigAutoField(primary_key=True)
    created_at = models.DateTimeField(db_index=True, editable=False)
    kind = models.CharField(max_length=64, db_index=True, editable=False)
    actor_type = models.CharField(max_length=10, choices=ActorType.choices, editable=False)
    actor_id = models.CharField(max_length=64, blank=True, editable=False)
    actor_name = models.CharField(max_length=150, blank=True, db_index=True, editable=False)
    agent_id = models.UUIDField(null=True, blank=True, db_index=True, editable=False)
    agent_name = models.CharField(max_length=100, blank=True, db_index=True, editable=False)
    invocation_id = models.UUIDField(null=True, blank=True, db_index=True, editable=False)
    tool = models.CharField(max_length=200, blank=True, db_index=True, editable=False)
    category = models.CharField(max_length=40, blank=True, editable=False)
    action_type = models.CharField(max_length=80, blank=True, editable=False)
    arguments_hash = models.CharField(max_length=64, blank=True, editable=False)
    outcome = models.CharField(max_length=40, blank=True, db_index=True, editable=False)
    status = models.CharField(max_length=40, blank=True, editable=False)
    reason = models.TextField(blank=True, editable=False)
    rule = models.CharField(max_length=200, blank=True, editable=False)
    duration_ms = models.IntegerField(null=True, blank=True, editable=False)
    request_id = models.CharField(max_length=64, blank=True, db_index=True, editable=False)
    data = models.JSONField(default=dict, blank=True, editable=False)
    prev_hash = models.CharField(max_length=64, editable=False)
    hash = models.CharField(max_length=64, unique=True, editable=False)
    # The audit key whose HMAC `hash` is; empty for events from before the chain was keyed.
    key_id = models.CharField(max_length=40, blank=True, default="", editable=False)

    class Meta:
        # The table keeps the name it had in tools_app: the app moved, the rows did not.
        db_table = "tools_app_auditevent"
        ordering = ["-id"]
        indexes = [models.Index(fields=["agent_name", "-id"]), models.Index(fields=["tool", "-id"])]

    def __str__(self) -> str:
        return f"#{self.id} {self.kind} {self.actor_name}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise PermissionError("audit events are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise PermissionError("audit events are append-only")
