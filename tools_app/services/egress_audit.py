"""egress_connections_record: one AuditEvent per connection a call's sandbox opened."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from tools_app.egress.records import ConnectionRecord, EgressOutcome
from tools_app.services.audit import Actor, audit_record

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
        for record in records:
            where = record.host if record.port is None else f"{record.host}:{record.port}"
            audit_record(
                kind=CONNECTION_KIND,
                actor=Actor.agent(agent),
                agent=agent,
                invocation_id=invocation.id,
                tool=invocation.tool,
                category=invocation.category,
                outcome=record.outcome.value,
                reason=record.reason
                or (f"{where}: {record.bytes_up} bytes up, {record.bytes_down} bytes down"),
                rule="" if record.outcome is EgressOutcome.CLOSED else "egress",
                duration_ms=record.duration_ms,
                data=record.as_data(),
            )
        if unrecorded:
            audit_record(
                kind=UNRECORDED_KIND,
                actor=Actor.agent(agent),
                agent=agent,
                invocation_id=invocation.id,
                tool=invocation.tool,
                category=invocation.category,
                outcome=EgressOutcome.REFUSED.value,
                reason=f"{unrecorded} more connections were refused after the call used its "
                "share of audit rows",
                rule="egress",
                data={"refused": unrecorded},
            )
