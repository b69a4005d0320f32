"""What each audited call acted on (paths, hosts, programs, tables): the audit log's
argument search reads these rows, never the arguments' JSON row by row.

Derived from the chained events (audit_app.subjects reads their recorded data), written
with each event by audit_record, and rebuilt for the whole log by the migration that
made the table: an index of the chain, never a record of its own. Each row is one
event's own subject; the search finds the other events of the same call through the
call (its finishing, its approvals, its connections), so "what touched notes/" answers
with every event of every such call while an event that names nothing writes no row.
"""

from __future__ import annotations

from django.db import models

from audit_app.models.event import AuditEvent
from audit_app.subjects import VALUE_MAX, SubjectKind


class AuditSubject(models.Model):
    id = models.BigAutoField(primary_key=True)
    event = models.ForeignKey(
        AuditEvent, on_delete=models.CASCADE, related_name="subjects", editable=False
    )
    # The call the event belongs to: the search finds the call's other events by it.
    invocation_id = models.UUIDField(null=True, blank=True, db_index=True, editable=False)
    kind = models.CharField(
        max_length=10, choices=[(k.value, k.value) for k in SubjectKind], editable=False
    )
    value = models.CharField(max_length=VALUE_MAX, editable=False)

    class Meta:
        indexes = [
            # Prefix searches (LIKE 'notes/%') use it on PostgreSQL with the pattern
            # operator class, whatever the database's collation; other backends ignore it.
            models.Index(
                fields=["kind", "value"],
                name="audit_subject_kind_value",
                opclasses=["varchar_pattern_ops", "varchar_pattern_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.value} (event #{self.event_id})"
