"""One governed tool call, from request to result."""

from __future__ import annotations

from django.db import models

from common.models import TimestampedModel, UUIDModel


class InvocationStatus(models.TextChoices):
    PENDING_APPROVAL = "pending_approval"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DENIED = "denied"
    EXPIRED = "expired"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"


TERMINAL_STATUSES = frozenset(
    {
        InvocationStatus.SUCCEEDED,
        InvocationStatus.FAILED,
        InvocationStatus.DENIED,
        InvocationStatus.EXPIRED,
        InvocationStatus.TIMED_OUT,
        InvocationStatus.CANCELLED,
    }
)


class Invocation(UUIDModel, TimestampedModel):
    agent = models.ForeignKey(
        "trust_app.Agent", on_delete=models.PROTECT, related_name="invocations"
    )
    tool = models.CharField(max_length=200, db_index=True)
    definition_hash = models.CharField(max_length=64, blank=True)
    category = models.CharField(max_length=40)
    action_type = models.CharField(max_length=80)
    safety_class = models.CharField(max_length=20)
    # The arguments as the agent sent them: the worker needs them to run the call.
    arguments = models.JSONField(default=dict)
    # The same with secrets redacted: what people and auditors are shown.
    arguments_redacted = models.JSONField(default=dict)
    arguments_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=20, choices=InvocationStatus.choices, db_index=True)
    decision = models.JSONField(default=dict)
    # NULL, not "", for "no key": the unique constraint applies only to real keys.
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    task_id = models.CharField(max_length=200, blank=True)
    # The agent's own words for why it makes the call: a claim people read, never trusted.
    # db_default: a node of the previous release inserts without it while both run.
    purpose = models.CharField(max_length=500, blank=True, default="", db_default="")
    batch_id = models.UUIDField(null=True, blank=True, db_index=True)
    batch_max_concurrency = models.PositiveSmallIntegerField(null=True, blank=True)
    # A queued call waiting its turn: its agent (or its batch) runs as many calls at
    # once as it may. It is sent to a worker when a slot frees, in order.
    held = models.BooleanField(default=False)
    # When it was last sent to its queue: a queued call sent long ago and never
    # claimed is sent again (the broker may have lost it; the claim runs it once).
    dispatched_at = models.DateTimeField(null=True, blank=True)
    # A cancel that came while the call ran in its sandbox: the call runs to its end
    # and keeps its outcome and result (a record never says "cancelled" of an effect).
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    queue = models.CharField(max_length=40, blank=True)
    backend = models.CharField(max_length=20, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Result: content is sanitised for the agent; raw_content is kept for auditors.
    is_error = models.BooleanField(null=True)
    content = models.TextField(blank=True)
    raw_content = models.TextField(blank=True)
    structured = models.JSONField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    truncated = models.BooleanField(default=False)
    duration_ms = models.IntegerField(null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "idempotency_key"],
                condition=models.Q(idempotency_key__isnull=False),
                name="invocation_idempotency_key_unique_per_agent",
            )
        ]
        indexes = [
            models.Index(fields=["agent", "-created_at"]),
            # The agent's calls in flight and waiting, counted on every admission.
            models.Index(fields=["agent", "status", "held"], name="invocation_agent_line"),
        ]

    def __str__(self) -> str:
        return f"{self.tool} {self.status} ({self.id})"

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES
