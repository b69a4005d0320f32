"""The tool registry as the console page shows it: contract, backend and on/off switch."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tools_app.models import ToolDefinition
from tools_app.registry import backend_for, tool_catalog


@dataclass(frozen=True)
class RegistryEntry:
    name: str
    category: str
    action_type: str
    safety_class: str
    backend: str
    definition_hash: str
    summary: str
    l1: str  # JSON text of what GET /api/v1/tools/ lists
    l2: str  # JSON text of GET /api/v1/tools/<name>/
    enabled: bool
    in_table: bool  # False until the registry table is synced (after migrate)


def tool_registry_entries() -> list[RegistryEntry]:
    """Every tool this process can run, with whether an admin switched it off."""
    rows = {row.name: row for row in ToolDefinition.objects.all()}
    entries = []
    for contract in tool_catalog():
        row = rows.get(contract.name)
        entries.append(
            RegistryEntry(
                name=contract.name,
                category=contract.category.value,
                action_type=contract.resolved_action_type,
                safety_class=contract.safety_class.value,
                backend=backend_for(contract),
                definition_hash=contract.definition_hash,
                summary=contract.summary,
                l1=json.dumps(contract.l1(), indent=2),
                l2=json.dumps(contract.l2(), indent=2, default=str),
                enabled=row.enabled if row is not None else True,
                in_table=row is not None,
            )
        )
    return sorted(entries, key=lambda e: (e.category, e.name))
