"""The argument index of the audit log (audit_app.models.subject), built for the events
already recorded: each event's own subjects (the other events of a call are found
through the call)."""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models

from audit_app.subjects import event_subjects

BATCH = 2000


def index_recorded_events(apps: Any, schema_editor: Any) -> None:
    event_model = apps.get_model("audit_app", "AuditEvent")
    subject_model = apps.get_model("audit_app", "AuditSubject")
    last = 0
    while True:
        batch = list(
            event_model.objects.filter(id__gt=last)
            .order_by("id")
            .values_list("id", "kind", "tool", "category", "invocation_id", "data")[:BATCH]
        )
        if not batch:
            break
        rows = []
        for event_id, kind, tool, category, invocation_id, data in batch:
            own = event_subjects(kind, tool, category, data if isinstance(data, dict) else {})
            rows += [
                subject_model(event_id=event_id, invocation_id=invocation_id, kind=k, value=v)
                for k, v in own
            ]
        subject_model.objects.bulk_create(rows)
        last = batch[-1][0]


class Migration(migrations.Migration):
    dependencies = [
        ("audit_app", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="AuditSubject",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                (
                    "invocation_id",
                    models.UUIDField(blank=True, db_index=True, editable=False, null=True),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("path", "path"),
                            ("host", "host"),
                            ("program", "program"),
                            ("table", "table"),
                        ],
                        editable=False,
                        max_length=10,
                    ),
                ),
                ("value", models.CharField(editable=False, max_length=512)),
                (
                    "event",
                    models.ForeignKey(
                        editable=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="subjects",
                        to="audit_app.auditevent",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["kind", "value"],
                        name="audit_subject_kind_value",
                        opclasses=["varchar_pattern_ops", "varchar_pattern_ops"],
                    )
                ],
            },
        ),
        migrations.RunPython(index_recorded_events, migrations.RunPython.noop),
    ]
