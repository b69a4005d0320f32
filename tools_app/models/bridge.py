"""The pin of each upstream MCP tool: the definition first seen (or last accepted), and any
changed definition held beside it until an admin decides."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from common.models import TimestampedModel


class UpstreamToolPin(TimestampedModel):
    """One upstream tool (``<server>__<tool>``) and the definition it is pinned to.

    ``pinned_*`` is the accepted definition ("" / null while none was ever accepted,
    as when the first one was held by the scan); ``candidate_*`` the one waiting for
    an admin, or refused by one. ``findings`` are the scan's findings for the
    definition last seen. Written only by the services in ``tools_app.bridge.pinning``.
    """

    class Status(models.TextChoices):
        PINNED = "pinned"
        HELD = "held"
        REJECTED = "rejected"

    server = models.CharField(max_length=100)
    tool = models.CharField(max_length=200)
    contract_name = models.CharField(max_length=310, unique=True)
    status = models.CharField(max_length=10, choices=Status.choices)
    pinned_hash = models.CharField(max_length=64, blank=True, default="")
    pinned_definition = models.JSONField(null=True, blank=True)
    candidate_hash = models.CharField(max_length=64, blank=True, default="")
    candidate_definition = models.JSONField(null=True, blank=True)
    candidate_seen_at = models.DateTimeField(null=True, blank=True)
    seen_hash = models.CharField(max_length=64)
    findings = models.JSONField(default=list, blank=True)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    accepted_by_person = models.BooleanField(default=False)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_by_name = models.CharField(max_length=150, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["server", "tool"]
        constraints = [
            models.UniqueConstraint(
                fields=["server", "tool"], name="tools_upstream_pin_server_tool"
            )
        ]

    def __str__(self) -> str:
        return f"{self.contract_name} ({self.status})"
