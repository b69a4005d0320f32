"""Writers of the tool registry table: sync from code, enable and disable."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from audit_app.record import Actor, audit_record
from common.errors import InvalidArgumentError, NotFoundError
from tools_app.approval_desk import approval_desk
from tools_app.models import ToolDefinition
from tools_app.registry import tool_catalog


@transaction.atomic
def tool_registry_sync(*, actor: Actor | None = None) -> list[str]:
    """Record every tool this code defines; a changed definition is audited with both hashes."""
    actor = actor or Actor.system("registry")
    changed: list[str] = []
    for contract in tool_catalog():
        fields: dict[str, Any] = {
            "source": "builtin",
            "category": contract.category.value,
            "action_type": contract.resolved_action_type,
            "safety_class": contract.safety_class.value,
            "definition": contract.model_dump(mode="json"),
            "definition_hash": contract.definition_hash,
        }
        row = ToolDefinition.objects.select_for_update().filter(name=contract.name).first()
        if row is None:
            ToolDefinition.objects.create(name=contract.name, **fields)
            kind, before = "tool.registered", ""
        elif row.definition_hash != contract.definition_hash:
            before = row.definition_hash
            ToolDefinition.objects.filter(pk=row.pk).update(**fields)
            kind = "tool.definition_changed"
        else:
            continue
        changed.append(contract.name)
        audit_record(
            kind=kind,
            actor=actor,
            tool=contract.name,
            category=contract.category.value,
            action_type=contract.resolved_action_type,
            outcome="registered",
            data={"definition_hash": contract.definition_hash, "previous_hash": before},
        )
    return changed


DISABLE_NEEDS_REASON = (
    "a reason is needed to disable a tool: say why, as the tools page shows it to everyone"
)


def tool_enabled_set(*, name: str, enabled: bool, actor: Actor, reason: str = "") -> ToolDefinition:
    """Switch a tool on or off for every agent; audited. Disabling needs a reason."""
    if not enabled and not reason.strip():
        _tool_disable_refused(name=name, actor=actor)
        raise InvalidArgumentError(DISABLE_NEEDS_REASON)
    return _tool_enabled_apply(name=name, enabled=enabled, actor=actor, reason=reason.strip())


@transaction.atomic
def _tool_disable_refused(*, name: str, actor: Actor) -> None:
    """Record a disable without a reason as refused (nothing else changes)."""
    row = ToolDefinition.objects.filter(name=name).first()
    if row is None:
        raise NotFoundError(f"no tool {name!r} in the registry")
    audit_record(
        kind="tool.disable_refused",
        actor=actor,
        tool=row.name,
        category=row.category,
        action_type=row.action_type,
        outcome="refused",
        reason=DISABLE_NEEDS_REASON,
    )


@transaction.atomic
def _tool_enabled_apply(*, name: str, enabled: bool, actor: Actor, reason: str) -> ToolDefinition:
    row = ToolDefinition.objects.select_for_update().filter(name=name).first()
    if row is None:
        raise NotFoundError(f"no tool {name!r} in the registry")
    if row.enabled != enabled:
        ToolDefinition.objects.filter(pk=row.pk).update(enabled=enabled)
        withdrawn = 0
        if not enabled:
            # Calls waiting for people can no longer run: withdraw them, saying why.
            why = f"; {reason}" if reason else ""
            withdrawn = approval_desk().withdraw_for_tool(
                tool=row.name,
                actor=actor,
                reason=f"withdrawn: {actor.name} disabled the tool {row.name}{why}; it cannot "
                "run, so the call will not be approved",
                code="tool_disabled",
            )
        audit_record(
            kind="tool.enabled" if enabled else "tool.disabled",
            actor=actor,
            tool=row.name,
            category=row.category,
            action_type=row.action_type,
            outcome="enabled" if enabled else "disabled",
            reason=reason,
            data={"withdrawn_requests": withdrawn} if not enabled else None,
        )
        row.refresh_from_db()
    return row
