"""Indexes that keep the filtered, keyset-paginated audit log fast on a large table.

Each filter column gets a (column, id) index, so "newest first below a cursor" is an
index range scan whatever the filter. On PostgreSQL a trigram index serves the free-text
search in reasons when the pg_trgm extension can be created (it is trusted since 13).
They are written as SQL, not model indexes: the model's state is unchanged.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

TABLE = "tools_app_auditevent"
KEYSET_COLUMNS = ("category", "action_type", "outcome", "status", "actor_name", "kind")
TRIGRAM_INDEX = "tools_audit_reason_trgm"


def _index_name(column: str) -> str:
    return f"tools_audit_{column}_id"


def create_indexes(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for column in KEYSET_COLUMNS:
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {_index_name(column)} ON {TABLE} ({column}, id)"
            )
        if connection.vendor != "postgresql":
            return
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")
        if cursor.fetchone() is None:
            return  # search still works, by scanning
        cursor.execute("SAVEPOINT synthorg_trgm")
        try:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except Exception:  # noqa: BLE001 - no privilege: keep the migration, search by scan
            cursor.execute("ROLLBACK TO SAVEPOINT synthorg_trgm")
            return
        cursor.execute("RELEASE SAVEPOINT synthorg_trgm")
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {TRIGRAM_INDEX} ON {TABLE} USING gin (reason gin_trgm_ops)"
        )


def drop_indexes(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        for column in KEYSET_COLUMNS:
            cursor.execute(f"DROP INDEX IF EXISTS {_index_name(column)}")
        if schema_editor.connection.vendor == "postgresql":
            cursor.execute(f"DROP INDEX IF EXISTS {TRIGRAM_INDEX}")


class Migration(migrations.Migration):
    dependencies = [("tools_app", "0002_tooldefinition_invocation")]

    operations = [migrations.RunPython(create_indexes, drop_indexes)]
