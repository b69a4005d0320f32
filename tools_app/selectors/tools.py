"""The tool registry as the console page shows it: contract, backend and on/off switch."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from audit_app.models import AuditEvent
from tools_app.models import ToolDefinition, UpstreamToolRecord
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
    # Who disabled it, when and why (from the audit trail), while it is disabled.
    disabled_by: str = ""
    disabled_reason: str = ""
    disabled_at: datetime | None = None
    # An upstream tool its server's last listing left unavailable: why.
    unavailable_reason: str = ""


def tools_disabled_by(names: list[str]) -> dict[str, AuditEvent]:
    """The audit event that disabled each of ``names`` last (one query for them all)."""
    latest: dict[str, AuditEvent] = {}
    if not names:
        return latest
    for event in AuditEvent.objects.filter(kind="tool.disabled", tool__in=names).order_by("-id"):
        latest.setdefault(event.tool, event)
    return latest


def tool_registry_entries() -> list[RegistryEntry]:
    """Every tool this process can run, with whether an admin switched it off, who and why."""
    rows = {row.name: row for row in ToolDefinition.objects.all()}
    disabled = tools_disabled_by([name for name, row in rows.items() if not row.enabled])
    unavailable = dict(
        UpstreamToolRecord.objects.filter(available=False).values_list("name", "reason")
    )
    entries = []
    for contract in tool_catalog():
        row = rows.get(contract.name)
        event = disabled.get(contract.name)
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
                disabled_by=event.actor_name if event else "",
                disabled_reason=event.reason if event else "",
                disabled_at=event.created_at if event else None,
                unavailable_reason=unavailable.get(contract.name, ""),
            )
        )
    return sorted(entries, key=lambda e: (e.category, e.name))
