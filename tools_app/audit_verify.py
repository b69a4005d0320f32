"""Recompute the audit hash chain as stored and report the first event that breaks it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools_app.audit_chain import CHAINED_FIELDS, GENESIS_HASH, event_hash
from tools_app.models import AuditEvent

VERIFY_CHUNK_ROWS = 5000


@dataclass(frozen=True)
class ChainReport:
    checked: int
    problem: str | None  # None when every event verifies


def _chained(row: dict[str, Any]) -> dict[str, Any]:
    """The fields as audit_record hashed them (ISO timestamps, UUIDs as text)."""
    return {
        **row,
        "created_at": row["created_at"].isoformat(),
        "agent_id": str(row["agent_id"]) if row["agent_id"] else None,
        "invocation_id": str(row["invocation_id"]) if row["invocation_id"] else None,
    }


def audit_chain_verify() -> ChainReport:
    """Walk every event in id order; the first whose links or hash do not match is named."""
    expected_prev = GENESIS_HASH
    checked = 0
    rows = (
        AuditEvent.objects.order_by("id")
        .values("id", "prev_hash", "hash", *CHAINED_FIELDS)
        .iterator(chunk_size=VERIFY_CHUNK_ROWS)
    )
    for row in rows:
        event_id, prev, stored = row.pop("id"), row.pop("prev_hash"), row.pop("hash")
        if prev != expected_prev:
            return ChainReport(
                checked,
                f"audit event #{event_id} ({row['kind']}): its prev_hash does not match the "
                "hash of the event before it (an event was removed, inserted or reordered)",
            )
        if event_hash(prev, _chained(row)) != stored:
            return ChainReport(
                checked,
                f"audit event #{event_id} ({row['kind']}): its contents do not match its hash "
                "(the row was changed after it was written)",
            )
        expected_prev = stored
        checked += 1
    return ChainReport(checked, None)
