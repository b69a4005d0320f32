"""PURE: the ``schema_inspect`` contract and how catalogue rows become its answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.contracts import ToolContract

_NAME: Final = {"type": "string", "minLength": 1, "maxLength": 128}

SCHEMA_INSPECT_CONTRACT: Final = ToolContract(
    name="schema_inspect",
    category=ToolCategory.DATABASE,
    action_type="db:query",
    safety_class=SafetyClass.READ,
    idempotent=True,
    summary="List the tables, views and columns of a configured database connection.",
    description=(
        "Reads the catalogue of the named connection in a read-only transaction: each "
        "table or view the connection's role can see, with its columns, types and "
        "nullability. `schema` and `table` narrow the answer; at most the configured "
        "number of tables is returned (`truncated` says there were more)."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "connection": {"type": "string", "minLength": 1, "maxLength": 64},
            "schema": _NAME,
            "table": _NAME,
        },
        "required": ["connection"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "connection": {"type": "string"},
            "tables": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "schema": {"type": "string"},
                        "name": {"type": "string"},
                        "kind": {"type": "string"},
                        "columns": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "name": {"type": "string"},
                                    "type": {"type": "string"},
                                    "nullable": {"type": "boolean"},
                                },
                                "required": ["name", "type", "nullable"],
                            },
                        },
                    },
                    "required": ["schema", "name", "kind", "columns"],
                },
            },
            "truncated": {"type": "boolean"},
        },
        "required": ["connection", "tables", "truncated"],
        "additionalProperties": False,
    },
    failure_modes=(
        "HOST_NOT_ALLOWED: no connection of that name is configured for you.",
        "CONNECTION_FAILED: the configured database cannot be reached.",
    ),
)


def schema_tables(
    columns: Sequence[tuple[str, str, str, str, str, bool]], max_tables: int
) -> tuple[list[dict[str, Any]], bool]:
    """Group (schema, table, kind, column, type, nullable) rows into at most ``max_tables``."""
    tables: list[dict[str, Any]] = []
    index: dict[tuple[str, str], dict[str, Any]] = {}
    truncated = False
    for schema, table, kind, column, data_type, nullable in columns:
        entry = index.get((schema, table))
        if entry is None:
            if len(tables) == max_tables:
                truncated = True
                continue
            entry = {"schema": schema, "name": table, "kind": kind, "columns": []}
            index[(schema, table)] = entry
            tables.append(entry)
        entry["columns"].append({"name": column, "type": data_type, "nullable": nullable})
    return tables, truncated
