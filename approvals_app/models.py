"""Requests for a person's decision on a call the policy would not decide alone."""

from __future__ import annotations

from django.db import models
from django.db.models import JSONField, Value

from common.models import TimestampedModel, UUIDModel


class ApprovalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


class Verdict(models.TextChoices):
    """What re-deciding a pending request found (empty: the policy still asks)."""

    NO_ASK = "no_ask"
    WITHDRAWN = "withdrawn"


class RiskTier(models.TextChoices):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class ApprovalRequest(UUIDModel, TimestampedModel):
    invocation = models.OneToOneField(
        "tools_app.Invocation", on_delete=models.CASCADE, related_name="approval"
    )
    status = models.CharField(
        max_length=20, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING, db_index=True
    )
    # Bound to the call: a decision is valid only for these exact arguments.
    arguments_hash = models.CharField(max_length=64)
    required_approvals = models.PositiveSmallIntegerField(default=1)
    approvals = models.PositiveSmallIntegerField(default=0)
    # What the call does, judged when it was asked (approvals_app.policy.risk): the label
    # the inbox sorts by, and the reasons people read, ``[{"tier": …, "text": …}]``.
    risk_tier = models.CharField(max_length=10, choices=RiskTier.choices, default=RiskTier.MEDIUM)
    risk_reasons = models.JSONField(default=list, blank=True, db_default=Value([], JSONField()))
    # What the call would touch, looked at when it was asked, without doing it
    # (approvals_app.selectors.previews): ``[{"kind", "text", "available", "at"}]``.
    previews = models.JSONField(default=list, blank=True, db_default=Value([], JSONField()))
    reason = models.TextField(blank=True)
    rule = models.CharField(max_length=200, blank=True)
    expires_at = models.DateTimeField(db_index=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    # Fixed when the request is made, so a later config change cannot loosen it.
    owner_may_approve = models.BooleanField(default=False)
    on_expiry = models.CharField(max_length=10, default="expire")
    # Flagged to admins when still pending after the configured time.
    escalated_at = models.DateTimeField(null=True, blank=True)
    # Who settled it, in words ("alice", "alice, bob", "expired"), for the inbox and a 409.
    decided_by = models.CharField(max_length=300, blank=True)
    # The policy's answer now, re-decided when something the call depends on changed:
    # "" (it still asks), "no_ask" (it would run without a person: it still waits for
    # one) or "withdrawn" (it would be refused: the request was closed).
    # db_default: a node of the previous release inserts without these while both run.
    verdict = models.CharField(
        max_length=10, choices=Verdict.choices, blank=True, default="", db_default=""
    )
    verdict_reason = models.TextField(blank=True, default="", db_default="")
    verdict_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["expires_at"]
        indexes = [models.Index(fields=["status", "created_at"])]

    def __str__(self) -> str:
        return f"approval {self.id} ({self.status})"


class ApprovalDecision(models.Model):
    """One person's answer; a request needing two approvals needs two distinct people."""

    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="decisions")
    person = models.ForeignKey("auth.User", null=True, on_delete=models.SET_NULL)
    person_name = models.CharField(max_length=150)
    decision = models.CharField(max_length=10)
    reason = models.TextField(blank=True)
    arguments_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["request", "person"], name="one_decision_per_person_per_request"
            )
        ]

    def __str__(self) -> str:
        return f"{self.person_name} {self.decision}"


class ApprovalGrant(UUIDModel):
    """ "Approve and remember": one agent may call one tool with these arguments for a while.

    Either ``arguments_hash`` (the exact arguments) or ``pattern`` (argument name →
    glob) is set. A grant is live until ``expires_at`` unless revoked.
    """

    agent = models.ForeignKey(
        "trust_app.Agent", on_delete=models.CASCADE, related_name="approval_grants"
    )
    tool = models.CharField(max_length=200)
    arguments_hash = models.CharField(max_length=64, blank=True)
    pattern = models.JSONField(default=dict, blank=True)
    source_request = models.ForeignKey(
        ApprovalRequest, null=True, blank=True, on_delete=models.SET_NULL, related_name="grants"
    )
    granted_by = models.ForeignKey(
        "auth.User", null=True, on_delete=models.SET_NULL, related_name="approval_grants"
    )
    granted_by_name = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(db_index=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by_name = models.CharField(max_length=150, blank=True)
    uses = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["agent", "tool", "expires_at"])]

    def __str__(self) -> str:
        return f"grant {self.id} of {self.tool} by {self.granted_by_name}"
