"""egress_connections_record: one AuditEvent per connection a call's sandbox opened.

``egress_server_connections_record`` writes the same rows for a warm MCP server's
proxy, which outlives one call: with the call that drained them, or with none (the
connections that ended after the last call, written when the server stops).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from audit_app.record import Actor, audit_record
from tools_app.egress.records import ConnectionRecord, EgressOutcome

CONNECTION_KIND = "egress.connection"
UNRECORDED_KIND = "egress.unrecorded"


def egress_connections_record(
    *,
    invocation: Any,
    records: list[ConnectionRecord],
    unrecorded: int = 0,
) -> None:
    """Write the rows for ``records`` (and one for connections refused without a row)."""
    agent = invocation.agent
    with transaction.atomic():
        _rows(
            actor=Actor.agent(agent),
            agent=agent,
            invocation_id=invocation.id,
            tool=invocation.tool,
            category=invocation.category,
            records=records,
            unrecorded=unrecorded,
            extra={},
        )


def egress_server_connections_record(
    *,
    server: str,
    agent: Any | None,
    invocation_id: uuid.UUID | None,
    tool: str,
    category: str,
    records: list[ConnectionRecord],
    unrecorded: int = 0,
) -> None:
    """The rows for connections of the MCP server ``server`` (its own proxy); ``agent``
    None for a server shared by every agent, ``invocation_id`` None for connections
    that ended between calls."""
    with transaction.atomic():
        _rows(
            actor=Actor.system(f"mcp server {server}"),
            agent=agent,
            invocation_id=invocation_id,
            tool=tool,
            category=category,
            records=records,
            unrecorded=unrecorded,
            extra={"server": server},
        )


def _rows(
    *,
    actor: Actor,
    agent: Any | None,
    invocation_id: uuid.UUID | None,
    tool: str,
    category: str,
    records: list[ConnectionRecord],
    unrecorded: int,
    extra: dict[str, Any],
) -> None:
    for record in records:
        where = record.host if record.port is None else f"{record.host}:{record.port}"
        audit_record(
            kind=CONNECTION_KIND,
            actor=actor,
            agent=agent,
            invocation_id=invocation_id,
            tool=tool,
            category=category,
            outcome=record.outcome.value,
            reason=record.reason
            or (f"{where}: {record.bytes_up} bytes up, {record.bytes_down} bytes down"),
            rule="" if record.outcome is EgressOutcome.CLOSED else "egress",
            duration_ms=record.duration_ms,
            data={**record.as_data(), **extra},
        )
    if unrecorded:
        audit_record(
            kind=UNRECORDED_KIND,
            actor=actor,
            agent=agent,
            invocation_id=invocation_id,
            tool=tool,
            category=category,
            outcome=EgressOutcome.REFUSED.value,
            reason=f"{unrecorded} more connections were refused after the call used its "
            "share of audit rows",
            rule="egress",
            data={"refused": unrecorded, **extra},
        )
