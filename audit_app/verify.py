"""Recompute the audit chain with the audit keys, then hold it against the checkpoints.

Events are read in id order in chunks (a server-side cursor on PostgreSQL), so a
log of millions verifies in bounded memory. The first problem found is named: the
first bad event's id, or the range of events that are missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from audit_app.chain import (
    AUDIT_CHAIN_KEYED,
    CHAINED_FIELDS,
    GENESIS_HASH,
    AuditKeyError,
    AuditKeyRing,
    event_hash,
    hashes_equal,
    keyed_event_hash,
)
from audit_app.checkpoint import StoredCheckpoint, checkpoints_read
from audit_app.keys import audit_key_ring, audit_keys_configured
from audit_app.models import AuditEvent

Progress = Callable[[int], None]


@dataclass(frozen=True)
class ChainReport:
    checked: int
    problem: str | None  # None when every event and every checkpoint verifies
    first_bad_event: int | None = None
    checkpoints: int = 0  # checkpoints held against the log
    keyed_from: int | None = None  # the first event with a keyed hash
    head_id: int | None = None
    keys_configured: bool = True  # a key existed before this run (else an unkeyed log is allowed)

    @property
    def ok(self) -> bool:
        return self.problem is None

    def summary(self) -> str:
        if self.problem is not None:
            return self.problem
        if self.keyed_from is not None:
            keyed = f"keyed from event #{self.keyed_from}"
        elif self.checked:
            keyed = (
                "no keyed events: the log is unkeyed (plain SHA-256, which anyone who can "
                "write the database can recompute) and no audit key was configured"
            )
        else:
            keyed = "no keyed events"
        return (
            f"audit chain intact: {self.checked} event(s) verified ({keyed}), "
            f"{self.checkpoints} checkpoint(s) matched"
        )


def _chained(row: dict[str, Any]) -> dict[str, Any]:
    """The fields as audit_record hashed them (ISO timestamps, UUIDs as text)."""
    return {
        **row,
        "created_at": row["created_at"].isoformat(),
        "agent_id": str(row["agent_id"]) if row["agent_id"] else None,
        "invocation_id": str(row["invocation_id"]) if row["invocation_id"] else None,
    }


class _Walk:
    """The state of one pass over the chain."""

    def __init__(self, ring: AuditKeyRing | None, checkpoints: list[StoredCheckpoint]) -> None:
        self.ring = ring
        self.pending = sorted(checkpoints, key=lambda c: c.checkpoint.head_id)
        self.matched = 0
        self.expected_prev = GENESIS_HASH
        self.prev_id: int | None = None
        self.keyed_from: int | None = None
        self.first_id: int | None = None
        self.checked = 0

    def link_problem(self, event_id: int, kind: str, prev: str) -> str | None:
        if hashes_equal(prev, self.expected_prev):
            return None
        if self.prev_id is None:
            return (
                f"audit event #{event_id} ({kind}): the first event left does not start the "
                f"chain (events before #{event_id} were removed)"
            )
        return (
            f"audit event #{event_id} ({kind}): its prev_hash does not match the hash of "
            f"event #{self.prev_id} before it (events between #{self.prev_id} and #{event_id} "
            "were removed, or rows were inserted, swapped or reordered)"
        )

    def hash_problem(
        self, event_id: int, row: dict[str, Any], prev: str, stored: str
    ) -> str | None:
        kind, key_id = row["kind"], row.pop("key_id")
        if not key_id:
            if self.keyed_from is not None:
                return (
                    f"audit event #{event_id} ({kind}): it has a plain, unkeyed hash (no key "
                    f"id) although the chain is keyed from event #{self.keyed_from}: it was "
                    "written or rewritten without the audit key (a downgrade); the log from "
                    f"#{event_id} on cannot be trusted, compare it with an export or backup"
                )
            if not hashes_equal(event_hash(prev, _chained(row)), stored):
                return (
                    f"audit event #{event_id} ({kind}): its contents do not match its hash "
                    "(the row was changed after it was written)"
                )
            return None
        key = self.ring.get(key_id) if self.ring is not None else None
        if key is None:
            return (
                f"audit event #{event_id} ({kind}): keyed with audit key {key_id!r}, which is "
                "not among the configured keys (SYNTHORG_AUDIT_KEYS or var/audit_keys)"
            )
        if self.keyed_from is None:
            if self.prev_id is not None and kind != AUDIT_CHAIN_KEYED:
                return (
                    f"audit event #{event_id} ({kind}): the first keyed event after unkeyed "
                    f"ones is not the {AUDIT_CHAIN_KEYED} marker"
                )
            self.keyed_from = event_id
        if not hashes_equal(keyed_event_hash(key, prev, _chained(row)), stored):
            return (
                f"audit event #{event_id} ({kind}): its contents do not match its hash under "
                f"audit key {key_id!r} (the row was changed after it was written, or its hash "
                "recomputed without the key)"
            )
        return None

    def skipped_checkpoint(self, event_id: int) -> str | None:
        """A checkpoint whose head lies before this event but was never met: that row is gone."""
        if self.pending and self.pending[0].checkpoint.head_id < event_id:
            held = self.pending[0]
            mark = held.checkpoint
            return (
                f"audit event #{mark.head_id} is missing: checkpoint {held.name} "
                f"({mark.created_at}) recorded it as the head of {mark.count} event(s)"
            )
        return None

    def checkpoint_problem(self, event_id: int, stored: str) -> str | None:
        """Every checkpoint whose head is this event must hold its hash and count."""
        while self.pending and self.pending[0].checkpoint.head_id == event_id:
            held = self.pending.pop(0)
            mark = held.checkpoint
            if not hashes_equal(mark.head_hash, stored):
                return (
                    f"audit event #{event_id}: its hash differs from the one checkpoint "
                    f"{held.name} ({mark.created_at}) recorded (the log up to #{event_id} "
                    "was rewritten)"
                )
            if mark.count != self.checked:
                return (
                    f"audit events up to #{event_id}: checkpoint {held.name} "
                    f"({mark.created_at}) counted {mark.count}, the log now holds "
                    f"{self.checked} (events up to #{event_id} were removed or added)"
                )
            self.matched += 1
        return None

    def downgrade_problem(self, keys_configured: bool) -> str | None:
        """Keys exist but no event is keyed: the whole log was re-hashed without the key."""
        if not keys_configured or self.keyed_from is not None or self.first_id is None:
            return None
        return (
            f"the audit log is not keyed although audit keys are configured: all "
            f"{self.checked} event(s), #{self.first_id} to #{self.prev_id}, carry plain SHA-256 "
            "hashes with no key id, which anyone who can write the database can recompute. "
            "A console with a key keys every event it writes, so the log was rewritten "
            "without the key (a downgrade) or restored from a copy made before the console "
            "had keys; compare it with an export or backup you trust"
        )

    def end_problem(self) -> str | None:
        """A checkpoint past the last event: the newest events were dropped."""
        if not self.pending:
            return None
        mark = max(self.pending, key=lambda c: c.checkpoint.head_id)
        last = f"#{self.prev_id}" if self.prev_id is not None else "nothing"
        first_missing = (self.prev_id or 0) + 1
        return (
            f"the newest audit events are missing: checkpoint {mark.name} "
            f"({mark.checkpoint.created_at}) recorded {mark.checkpoint.count} event(s) up to "
            f"#{mark.checkpoint.head_id}, the log ends at {last} with {self.checked} "
            f"(missing: events #{first_missing} to #{mark.checkpoint.head_id}, "
            f"{mark.checkpoint.count - self.checked} event(s)). If the database was "
            "restored from a backup on purpose, run `manage.py synthorg_audit restored` "
            "before the console starts: it sets aside the checkpoints of events after the "
            "backup and records the restore"
        )


def audit_event_authentic(event: AuditEvent) -> bool:
    """Whether this one event's keyed hash verifies under the audit keys: a writer without
    a key cannot forge or change it. Its place in the chain is the full walk's to check."""
    try:
        ring = audit_key_ring()
    except AuditKeyError:
        return False
    key = ring.get(event.key_id) if event.key_id else None
    if key is None:
        return False
    fields = _chained({name: getattr(event, name) for name in CHAINED_FIELDS})
    return hashes_equal(keyed_event_hash(key, event.prev_hash, fields), event.hash)


def audit_chain_verify(*, progress: Progress | None = None) -> ChainReport:
    """Walk every event in id order with the audit keys, then the checkpoints.

    `progress` is called with the number of events checked after each chunk.
    """
    # With no key yet (outside production) none is made here: the log can only be
    # unkeyed, and recording this run's result makes the console's first key.
    keys_configured = audit_keys_configured()
    ring: AuditKeyRing | None = None
    if keys_configured or settings.SYNTHORG_ENV == "production":
        try:
            ring = audit_key_ring()
        except AuditKeyError as exc:
            return ChainReport(0, f"the audit keys cannot be used: {exc}")
    checkpoints, checkpoint_problems = checkpoints_read(ring)
    if checkpoint_problems:
        return ChainReport(0, checkpoint_problems[0])
    walk = _Walk(ring, checkpoints)
    chunk = settings.SYNTHORG_AUDIT_VERIFY_CHUNK_ROWS
    rows = (
        AuditEvent.objects.order_by("id")
        .values("id", "prev_hash", "hash", "key_id", *CHAINED_FIELDS)
        .iterator(chunk_size=chunk)
    )
    for row in rows:
        event_id, prev, stored = row.pop("id"), row.pop("prev_hash"), row.pop("hash")
        problem = walk.skipped_checkpoint(event_id)
        problem = problem or walk.link_problem(event_id, row["kind"], prev)
        problem = problem or walk.hash_problem(event_id, row, prev, stored)
        if problem is None:
            walk.checked += 1
            problem = walk.checkpoint_problem(event_id, stored)
        if problem is not None:
            return ChainReport(
                walk.checked, problem, first_bad_event=event_id, keyed_from=walk.keyed_from
            )
        walk.expected_prev, walk.prev_id = stored, event_id
        if walk.first_id is None:
            walk.first_id = event_id
        if progress is not None and walk.checked % chunk == 0:
            progress(walk.checked)
    problem = walk.end_problem()
    first_bad = (walk.prev_id or 0) + 1 if problem else None
    if problem is None:
        problem = walk.downgrade_problem(keys_configured)
        first_bad = walk.first_id if problem else None
    if progress is not None:
        progress(walk.checked)
    return ChainReport(
        walk.checked,
        problem,
        first_bad_event=first_bad,
        checkpoints=walk.matched,
        keyed_from=walk.keyed_from,
        head_id=walk.prev_id,
        keys_configured=keys_configured,
    )
