"""Writers of what the bridge learns: discovered tools, unavailable servers; and the row
of a bridged call, which the worker writes with the call's end (``bridge_call_entry``).

Each writer runs in one transaction with its audit rows. Discovery of the same definitions
again writes nothing, so several workers may report the same server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from django.db import transaction
from django.utils import timezone

from audit_app.models import AuditEvent
from audit_app.record import Actor, AuditEntry, audit_record
from common.config.mcp import McpServer
from tools_app.bridge.classify import bridged_contract
from tools_app.bridge.definitions import CATEGORY, UpstreamTool
from tools_app.bridge.pinning import definitions_review
from tools_app.contracts import ContractError, ToolRegistry
from tools_app.models import ToolDefinition, UpstreamToolRecord

log = structlog.get_logger("synthorg.bridge")

ACTOR = Actor.system("mcp-bridge")
# Rows about a server as a whole (beside the per-tool ``mcp.tool_*`` rows).
SERVER_UNAVAILABLE = "mcp.server_unavailable"
SERVER_AVAILABLE = "mcp.server_available"
SERVER_KINDS = (SERVER_UNAVAILABLE, SERVER_AVAILABLE)
SOURCE_PREFIX = "mcp:"


@dataclass(frozen=True)
class Verdict:
    """Whether a discovered tool may be called now, and why not."""

    available: bool
    reason: str = ""


def _review(server: str, tools: Sequence[UpstreamTool]) -> Mapping[str, Verdict]:
    """The pinning review (pins, scan, admin holds) of these definitions, by contract name.

    Fails closed: a review that raises holds every tool of the server; a tool the review
    says nothing of is held too.
    """
    try:
        verdicts = definitions_review(server=server, tools=tools)
    except Exception as exc:
        log.exception("bridge_review_failed", server=server)
        why = f"the definition review failed ({exc.__class__.__name__}); held until it works"
        return {t.contract_name: Verdict(False, why) for t in tools}
    return {name: Verdict(v.available, v.reason) for name, v in verdicts.items()}


def _builtin_registry() -> ToolRegistry:
    from tools_app.registry import builtin_catalog

    catalog = builtin_catalog()
    registry = ToolRegistry(action_types=catalog.action_types)
    for contract in catalog:
        registry.register(contract)
    return registry


def _admitted(
    server: McpServer, tools: Sequence[UpstreamTool]
) -> dict[str, tuple[dict[str, Any] | None, str]]:
    """Per upstream name: the contract as JSON (None when refused) and the refusal."""
    registry = _builtin_registry()
    out: dict[str, tuple[dict[str, Any] | None, str]] = {}
    for tool in tools:
        try:
            contract = registry.register(bridged_contract(tool, server.tools))
        except (ContractError, ValueError) as exc:
            out[tool.name] = (None, f"its definition was refused: {exc}")
            continue
        out[tool.name] = (contract.model_dump(mode="json"), "")
    return out


def _audit(kind: str, record: UpstreamToolRecord, **extra: Any) -> None:
    contract = record.contract or {}
    audit_record(
        kind=kind,
        actor=ACTOR,
        tool=record.name,
        category=CATEGORY,
        action_type=str(contract.get("action_type") or ""),
        outcome="available" if record.available else "unavailable",
        reason=record.reason,
        data={
            "server": record.server,
            "upstream_tool": record.upstream_name,
            "definition_hash": record.upstream_hash,
            "server_identity": record.server_identity,
            **extra,
        },
    )


def _sync_definition_row(record: UpstreamToolRecord) -> None:
    """The registry table row admins enable and disable the tool by."""
    contract = record.contract
    if contract is None:
        return
    fields = {
        "source": SOURCE_PREFIX + record.server,
        "category": CATEGORY,
        "action_type": contract["action_type"],
        "safety_class": contract["safety_class"],
        "definition": contract,
        "definition_hash": record.upstream_hash,
    }
    ToolDefinition.objects.update_or_create(name=record.name, defaults=fields)


@transaction.atomic
def bridge_discovery_record(*, server: McpServer, tools: Sequence[UpstreamTool]) -> list[str]:
    """Record what ``server`` lists now; return the names of tools whose record changed.

    Tools the config's ``tools.allow``/``deny`` leave out are not recorded; tools it no
    longer lists become unavailable with that reason.
    """
    admitted = [t for t in tools if server.tools.admits(t.name)]
    contracts = _admitted(server, admitted)
    standings = _review(server.name, admitted)
    now = timezone.now()
    changed: list[str] = []
    seen: set[str] = set()
    for tool in admitted:
        contract, refusal = contracts[tool.name]
        standing = standings.get(
            tool.contract_name, Verdict(False, "the definition review gave it no standing")
        )
        available = contract is not None and standing.available
        reason = refusal or ("" if standing.available else standing.reason)
        values = {
            "server": server.name,
            "upstream_name": tool.name,
            "upstream_hash": tool.definition_hash(),
            "server_identity": server.identity,
            "contract": contract,
            "available": available,
            "reason": reason,
        }
        seen.add(tool.contract_name)
        record = UpstreamToolRecord.objects.select_for_update().filter(name=tool.contract_name)
        row = record.first()
        if row is None:
            row = UpstreamToolRecord.objects.create(
                name=tool.contract_name, discovered_at=now, **values
            )
            kind, previous = "mcp.tool_registered", ""
        elif any(getattr(row, k) != v for k, v in values.items()):
            previous = row.upstream_hash
            for key, value in values.items():
                setattr(row, key, value)
            row.discovered_at = now
            row.save()
            kind = "mcp.tool_changed" if previous != row.upstream_hash else "mcp.tool_standing"
        else:
            continue
        _sync_definition_row(row)
        changed.append(row.name)
        _audit(kind, row, previous_hash=previous)
    gone = UpstreamToolRecord.objects.select_for_update().filter(server=server.name)
    for row in gone.exclude(name__in=seen):
        why = f"the MCP server {server.name} no longer lists it (or the config leaves it out)"
        if _mark_unavailable(row, why):
            changed.append(row.name)
    if _server_was_unavailable(server.name)[0]:
        _audit_server(server.name, available=True)
    return changed


def _mark_unavailable(row: UpstreamToolRecord, reason: str) -> bool:
    if not row.available and row.reason == reason:
        return False
    row.available, row.reason = False, reason
    row.save(update_fields=["available", "reason", "updated_at"])
    _audit("mcp.tool_unavailable", row)
    return True


def _server_was_unavailable(server: str) -> tuple[bool, str]:
    """Whether the last server-level row of ``server`` says unavailable, and its reason."""
    last = (
        AuditEvent.objects.filter(kind__in=SERVER_KINDS, data__server=server)
        .order_by("-id")
        .values("kind", "reason")
        .first()
    )
    if last is None or last["kind"] != SERVER_UNAVAILABLE:
        return False, ""
    return True, str(last["reason"])


def _audit_server(server: str, *, available: bool, reason: str = "", stderr: str = "") -> None:
    audit_record(
        kind=SERVER_AVAILABLE if available else SERVER_UNAVAILABLE,
        actor=ACTOR,
        category=CATEGORY,
        outcome="available" if available else "unavailable",
        reason=reason,
        data={"server": server, **({"stderr": stderr} if stderr else {})},
    )


@transaction.atomic
def bridge_server_unavailable(*, server: str, reason: str, stderr: str = "") -> list[str]:
    """Every tool of ``server`` unavailable with ``reason`` (it vanished or failed health).

    The server itself gets a row too (once per reason), so a server that never listed a
    tool (refused by the SSRF guard, its secrets not granted, never answering) still says
    why to the admins reading the audit log; ``stderr``, the sanitised tail of what a
    stdio server wrote there, goes in its ``data.stderr``.
    """
    rows = UpstreamToolRecord.objects.select_for_update().filter(server=server)
    changed = [row.name for row in rows if _mark_unavailable(row, reason)]
    if _server_was_unavailable(server) != (True, reason):
        _audit_server(server, available=False, reason=reason, stderr=stderr)
    return changed


@transaction.atomic
def bridge_servers_unconfigured(*, configured: Sequence[str]) -> list[str]:
    """Tools of servers the config no longer names become unavailable, saying so."""
    rows = UpstreamToolRecord.objects.select_for_update().exclude(server__in=list(configured))
    return [
        row.name
        for row in rows
        if _mark_unavailable(row, f"the MCP server {row.server} is no longer configured")
    ]


def bridge_call_entry(
    *,
    record: Mapping[str, str],
    invocation_id: str | None,
    outcome: str,
    reason: str = "",
    duration_ms: int | None = None,
) -> AuditEntry:
    """The bridge's own row for one upstream call (server, tool, hash and server
    identity), as ``audit_record`` takes it less the agent: the worker appends it with
    the call's end, in the one transaction that settles the call."""
    import uuid

    from tools_app.agent_view import agent_message

    return {
        "kind": "mcp.call",
        "actor": ACTOR,
        "invocation_id": uuid.UUID(invocation_id) if invocation_id else None,
        "tool": record["name"],
        "category": CATEGORY,
        "outcome": outcome,
        # The server's words may quote what it read: sanitised like everything it says.
        "reason": agent_message(reason),
        "duration_ms": duration_ms,
        "data": {
            "server": record["server"],
            "upstream_tool": record["upstream_name"],
            "definition_hash": record["upstream_hash"],
            "server_identity": record["server_identity"],
        },
    }
