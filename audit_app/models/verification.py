"""One run of the audit chain's verification, asked for from the console, with its progress."""

from __future__ import annotations

from django.db import models


class VerificationStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    # Its process stopped before it had a result (past SYNTHORG_AUDIT_VERIFY_TIME_LIMIT):
    # not a finding about the chain either way.
    ABANDONED = "abandoned"


class AuditVerification(models.Model):
    id = models.BigAutoField(primary_key=True)
    requested_by = models.CharField(max_length=150)
    requested_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(
        max_length=10, choices=VerificationStatus.choices, default=VerificationStatus.QUEUED
    )
    total = models.BigIntegerField(default=0)  # events in the log when the run started
    checked = models.BigIntegerField(default=0)
    checkpoints = models.IntegerField(default=0)
    first_bad_event = models.BigIntegerField(null=True, blank=True)
    summary = models.TextField(blank=True)

    class Meta:
        db_table = "tools_app_auditverification"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"audit verification #{self.id} ({self.status})"

    @property
    def done(self) -> bool:
        return self.status in (
            VerificationStatus.PASSED,
            VerificationStatus.FAILED,
            VerificationStatus.ABANDONED,
        )

    @property
    def percent(self) -> int:
        if self.done:
            return 100
        return min(99, int(100 * self.checked / self.total)) if self.total else 0
