"""Agent memories and the per-task disclosure state; a full-text GIN index on PostgreSQL.

The GIN index is written as SQL on PostgreSQL only (SQLite has no such index); its
expression is exactly the one ``memory_search`` queries, so the planner can use it.
"""

import uuid
from typing import Any

import django.db.models.deletion
from django.db import migrations, models

MEMORY_SEARCH_INDEX = "tools_memory_content_fts"


def create_search_index(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {MEMORY_SEARCH_INDEX} ON tools_app_agentmemory "
            "USING gin (to_tsvector('english'::regconfig, COALESCE(content, '')))"
        )


def drop_search_index(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {MEMORY_SEARCH_INDEX}")


class Migration(migrations.Migration):
    dependencies = [
        ("tools_app", "0003_audit_filter_indexes"),
        ("trust_app", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="AgentMemory",
            fields=[
                ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("content", models.TextField()),
                ("tags", models.JSONField(blank=True, default=list)),
                ("task_id", models.CharField(blank=True, default="", max_length=200)),
                (
                    "agent",
                    models.ForeignKey(
                        editable=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memories",
                        to="trust_app.agent",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at"],
                "indexes": [
                    models.Index(fields=["agent", "-created_at"], name="tools_memory_agent_new")
                ],
            },
        ),
        migrations.CreateModel(
            name="ToolDisclosureState",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                ("task_id", models.CharField(blank=True, default="", max_length=200)),
                ("loaded", models.JSONField(blank=True, default=list)),
                (
                    "agent",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="disclosure_states",
                        to="trust_app.agent",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("agent", "task_id"), name="tools_disclosure_agent_task"
                    )
                ],
            },
        ),
        migrations.RunPython(create_search_index, drop_search_index),
    ]
