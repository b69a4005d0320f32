"""audit_record: the one writer of AuditEvents, always inside the caller's transaction."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Required, TypedDict, Unpack

from django.db import connection, transaction
from django.utils import timezone

from audit_app.chain import (
    AUDIT_CHAIN_KEYED,
    GENESIS_HASH,
    AuditChainUnkeyedError,
    AuditKey,
    keyed_event_hash,
)
from audit_app.keys import audit_key_ring, audit_keys_configured
from audit_app.models import AuditEvent, AuditSubject
from audit_app.subjects import event_subjects
from common.db_rows import insert_instance, insert_with_child
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


class AuditEntry(TypedDict, total=False):
    """One event to append, as ``audit_record`` takes it (``kind`` and ``actor`` required)."""

    kind: Required[str]
    actor: Required[Actor]
    agent: Any | None
    invocation_id: uuid.UUID | None
    tool: str
    category: str
    action_type: str
    arguments_hash: str
    outcome: str
    status: str
    reason: str
    rule: str
    duration_ms: int | None
    data: dict[str, Any] | None


def audit_record(**entry: Unpack[AuditEntry]) -> AuditEvent:
    """Append one event to the chain. Must run inside the transaction of the change it records.

    The event's hash is an HMAC under the newest audit key. After unkeyed events it is
    preceded by one AUDIT_CHAIN_KEYED marker only when this call makes the console's first
    key; with a key configured already it refuses (AuditChainUnkeyedError) until a person
    marks the switch with audit_chain_start_keyed.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_record must run inside the transaction it records")
    key, prev = _chain_open()
    event = _chained(key, prev, _event_fields(entry))
    rows = _subject_rows([event])
    if len(rows) == 1:
        # Most events name one thing: the event and its subject go in one statement.
        insert_with_child(event, rows[0], "event")
    else:
        insert_instance(event)
        _subjects_insert(rows)
    return event


def audit_record_many(entries: Sequence[AuditEntry]) -> list[AuditEvent]:
    """Append several events, in order, as one writer: the chain is locked and its head
    read once, and the rows inserted together. Each entry holds ``audit_record``'s
    arguments; the events are exactly those ``audit_record`` would write one by one.
    Must run inside the transaction of the changes they record."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_record_many must run inside the transaction it records")
    if not entries:
        return []
    key, prev = _chain_open()
    events: list[AuditEvent] = []
    for entry in entries:
        event = _chained(key, prev, _event_fields(entry))
        events.append(event)
        prev = event.hash
    AuditEvent.objects.bulk_create(events)
    _subjects_write(events)
    return events


def _chain_open() -> tuple[AuditKey, str]:
    """Lock the chain for this transaction; the key to sign with and the hash to follow.

    Events are hashed under the newest audit key. After unkeyed events, one
    AUDIT_CHAIN_KEYED marker comes first only when this append makes the console's
    first key; with a key configured already it refuses (AuditChainUnkeyedError).
    """
    first_key = not audit_keys_configured()  # this append makes the console's first key
    key = audit_key_ring().newest  # before the lock: a missing key refuses the change
    head = _lock_chain_and_read_head()
    prev = head[0] if head else GENESIS_HASH
    if head is not None and not head[1] and first_key:
        # No key existed, so no keyed event can have been re-hashed away: the unkeyed
        # events are this console's history from before it had a key.
        prev = _mark_keyed(key, prev, Actor.system()).hash
    elif head is not None and not head[1]:
        raise AuditChainUnkeyedError(
            "the audit log's newest event is unkeyed (plain SHA-256, no key id) although an "
            "audit key is configured: the log was re-hashed without the key (a downgrade) or "
            "comes from a version without audit keys. Nothing more is recorded until it is "
            "checked: `manage.py synthorg_audit verify` names what it finds; if the unkeyed "
            "events are genuine history, `manage.py synthorg_audit start-keyed` marks where "
            "keyed events begin"
        )
    return key, prev


def _event_fields(entry: AuditEntry) -> dict[str, Any]:
    actor, agent = entry["actor"], entry.get("agent")
    return {
        **_blank_fields(),
        "kind": entry["kind"],
        "actor_type": actor.type,
        "actor_id": actor.id,
        "actor_name": actor.name,
        "agent_id": agent.pk if agent is not None else None,
        "agent_name": agent.name if agent is not None else "",
        "invocation_id": entry.get("invocation_id"),
        "tool": entry.get("tool", ""),
        "category": entry.get("category", ""),
        "action_type": entry.get("action_type", ""),
        "arguments_hash": entry.get("arguments_hash", ""),
        "outcome": entry.get("outcome", ""),
        "status": entry.get("status", ""),
        "reason": entry.get("reason", ""),
        "rule": entry.get("rule", ""),
        "duration_ms": entry.get("duration_ms"),
        "data": entry.get("data") or {},
    }


def _subjects_write(events: Sequence[AuditEvent]) -> None:
    """Index what each event itself acted on (models/subject.py). The other events of its
    call are found through the call: nothing is read or copied here, so an event that
    names nothing (a call's finishing) costs no statement."""
    _subjects_insert(_subject_rows(events))


def _subject_rows(events: Sequence[AuditEvent]) -> list[AuditSubject]:
    return [
        AuditSubject(event=event, invocation_id=event.invocation_id, kind=k, value=v)
        for event in events
        for k, v in sorted(
            set(event_subjects(event.kind, event.tool, event.category, event.data or {}))
        )
    ]


def _subjects_insert(rows: list[AuditSubject]) -> None:
    if len(rows) == 1:
        # Most events name one thing: one precompiled insert, without bulk_create's work.
        insert_instance(rows[0])
    elif rows:
        AuditSubject.objects.bulk_create(rows)


def audit_chain_start_keyed(*, actor: Actor) -> AuditEvent | None:
    """Mark where keyed events begin after a log of unkeyed ones; None when the newest
    event is keyed already (or the log is empty). Must run inside a transaction.

    Deliberately a person's act, never automatic: a marker appended to a log someone
    re-hashed without the key would make that rewrite verify (a downgrade).
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_chain_start_keyed must run inside a transaction")
    key = audit_key_ring().newest
    head = _lock_chain_and_read_head()
    if head is None or head[1]:
        return None
    return _mark_keyed(key, head[0], actor)


def _mark_keyed(key: AuditKey, unkeyed_head: str, actor: Actor) -> AuditEvent:
    return _append(
        key,
        unkeyed_head,
        {
            **_blank_fields(),
            "kind": AUDIT_CHAIN_KEYED,
            "actor_type": actor.type,
            "actor_id": actor.id,
            "actor_name": actor.name,
            "reason": f"events from here on are keyed (HMAC-SHA256, key {key.id})",
            "data": {"key_id": key.id, "unkeyed_head": unkeyed_head},
        },
    )


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


def _chained(key: AuditKey, prev: str, fields: dict[str, Any]) -> AuditEvent:
    """The event with these fields that follows ``prev``, hashed under ``key`` (unsaved)."""
    digest = keyed_event_hash(key, prev, chained_values(fields))
    return AuditEvent(**fields, prev_hash=prev, hash=digest, key_id=key.id)


def _append(key: AuditKey, prev: str, fields: dict[str, Any]) -> AuditEvent:
    event = _chained(key, prev, fields)
    insert_instance(event)
    return event
