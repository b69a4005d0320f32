"""audit_record: the one writer of AuditEvents, always inside the caller's transaction."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from audit_app.chain import AUDIT_CHAIN_KEYED, GENESIS_HASH, AuditKey, keyed_event_hash
from audit_app.keys import audit_key_ring
from audit_app.models import AuditEvent
from common.platform.logs import current_request_id

# Any constant works: it names the one lock that orders writers of the chain.
_CHAIN_LOCK_KEY = 0x5A0D17


@dataclass(frozen=True)
class Actor:
    type: str
    id: str
    name: str

    @classmethod
    def system(cls, name: str = "system") -> Actor:
        return cls(type="system", id="", name=name)

    @classmethod
    def person(cls, user: Any) -> Actor:
        return cls(type="person", id=str(user.pk), name=user.get_username())

    @classmethod
    def agent(cls, agent: Any) -> Actor:
        return cls(type="agent", id=str(agent.pk), name=agent.name)


# The newest event's hash and key id, compiled once per database backend.
_last_hash_sql: dict[str, str] = {}


def _lock_chain_and_read_head() -> tuple[str, str] | None:
    """Serialise chain writers until the transaction ends, then read the chain's head.

    On PostgreSQL both go in one round trip: two statements in one simple query
    run in order, and the second takes its snapshot after the first has the
    lock, so it sees the head the previous writer committed. SQLite is serial
    already.
    """
    sql = _last_hash_sql.get(connection.vendor)
    if sql is None:
        query = AuditEvent.objects.order_by("-id").values_list("hash", "key_id")[:1].query
        statement, params = query.sql_with_params()
        if params:  # a fixed statement is expected; never splice values into SQL
            raise RuntimeError("the audit chain head query unexpectedly has parameters")
        sql = _last_hash_sql[connection.vendor] = statement
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT pg_advisory_xact_lock({int(_CHAIN_LOCK_KEY)}); {sql}")
            cursor.nextset()
        else:
            cursor.execute(sql)
        row = cursor.fetchone()
    return (row[0], row[1]) if row else None


def audit_record(
    *,
    kind: str,
    actor: Actor,
    agent: Any | None = None,
    invocation_id: uuid.UUID | None = None,
    tool: str = "",
    category: str = "",
    action_type: str = "",
    arguments_hash: str = "",
    outcome: str = "",
    status: str = "",
    reason: str = "",
    rule: str = "",
    duration_ms: int | None = None,
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event to the chain. Must run inside the transaction of the change it records.

    The event's hash is an HMAC under the newest audit key. The first keyed event after
    events with plain hashes is preceded by one AUDIT_CHAIN_KEYED event marking the switch.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_record must run inside the transaction it records")
    key = audit_key_ring().newest  # before the lock: a missing key refuses the change
    head = _lock_chain_and_read_head()
    prev = head[0] if head else GENESIS_HASH
    if head is not None and not head[1]:
        marker = _append(
            key,
            prev,
            {
                **_blank_fields(),
                "kind": AUDIT_CHAIN_KEYED,
                "actor_type": "system",
                "actor_name": "system",
                "reason": f"events from here on are keyed (HMAC-SHA256, key {key.id})",
                "data": {"key_id": key.id, "unkeyed_head": prev},
            },
        )
        prev = marker.hash
    fields: dict[str, Any] = {
        **_blank_fields(),
        "kind": kind,
        "actor_type": actor.type,
        "actor_id": actor.id,
        "actor_name": actor.name,
        "agent_id": agent.pk if agent is not None else None,
        "agent_name": agent.name if agent is not None else "",
        "invocation_id": invocation_id,
        "tool": tool,
        "category": category,
        "action_type": action_type,
        "arguments_hash": arguments_hash,
        "outcome": outcome,
        "status": status,
        "reason": reason,
        "rule": rule,
        "duration_ms": duration_ms,
        "data": data or {},
    }
    return _append(key, prev, fields)


def _blank_fields() -> dict[str, Any]:
    return {
        "created_at": timezone.now(),
        "actor_id": "",
        "agent_id": None,
        "agent_name": "",
        "invocation_id": None,
        "tool": "",
        "category": "",
        "action_type": "",
        "arguments_hash": "",
        "outcome": "",
        "status": "",
        "reason": "",
        "rule": "",
        "duration_ms": None,
        "request_id": current_request_id() or "",
        "data": {},
    }


def chained_values(fields: dict[str, Any]) -> dict[str, Any]:
    """The values as they will read back from the database (ISO timestamps, str UUIDs)."""
    return {
        **fields,
        "created_at": fields["created_at"].isoformat(),
        "agent_id": str(fields["agent_id"]) if fields["agent_id"] else None,
        "invocation_id": str(fields["invocation_id"]) if fields["invocation_id"] else None,
    }


def _append(key: AuditKey, prev: str, fields: dict[str, Any]) -> AuditEvent:
    digest = keyed_event_hash(key, prev, chained_values(fields))
    return AuditEvent.objects.create(**fields, prev_hash=prev, hash=digest, key_id=key.id)
