"""audit_restore_record: after the database was restored from a backup, the checkpoints of
the log's lost future are set aside and the restore is recorded in the log itself.

A checkpoint whose head event is missing from the restored log, or was written after the
checkpoint (the log went on from the backup and reused the id), describes events the
backup never held: held against the restored log it reads as "the newest events are
missing", which is true and is what a restore means. A person who restored on purpose
says so with this service (``manage.py synthorg_audit restored``): those checkpoints move
to a ``superseded-<time>/`` directory beside the others (kept, never deleted), the log
is verified against the checkpoints that remain, and only when it verifies is the
restore recorded (an ``audit.restored`` event naming what was set aside) and a fresh
checkpoint written. A log that does not verify keeps every checkpoint where it was: a
restore never hides a change inside the restored range.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.db import transaction

from audit_app.checkpoint import StoredCheckpoint, audit_checkpoint_write, checkpoint_dir
from audit_app.checkpoint import checkpoints_read as read_checkpoints
from audit_app.keys import audit_key_ring
from audit_app.models import AuditEvent
from audit_app.record import Actor, audit_record
from audit_app.verify import audit_chain_verify

AUDIT_RESTORED = "audit.restored"


class AuditRestoreError(Exception):
    """The restore cannot be recorded: the reason says what to look at."""


@dataclass(frozen=True)
class RestoreRecorded:
    """What a recorded restore did."""

    head_id: int
    set_aside: tuple[str, ...]
    directory: Path | None
    checkpoint: str | None


def audit_restore_record(*, actor: Actor) -> RestoreRecorded:
    """Set aside the checkpoints past the restored log's head, verify, record the restore."""
    checkpoints, problems = read_checkpoints(audit_key_ring())
    if problems:
        raise AuditRestoreError(problems[0])
    beyond = _after_the_backup(checkpoints)
    # The backup's newest event: written before the first checkpoint it never had.
    lost_from = min((_at(c) for c in beyond), default=None)
    held = AuditEvent.objects.filter(created_at__lt=lost_from) if lost_from else AuditEvent.objects
    head_id = held.order_by("-id").values_list("id", flat=True).first() or 0
    directory = _set_aside(beyond) if beyond else None
    report = audit_chain_verify()
    if not report.ok:
        if directory is not None:
            _put_back(beyond, directory)
        raise AuditRestoreError(
            f"the restored log does not verify against the checkpoints within it, so "
            f"nothing was set aside: {report.summary()}"
        )
    names = tuple(c.name for c in beyond)
    with transaction.atomic():
        audit_record(
            kind=AUDIT_RESTORED,
            actor=actor,
            outcome="restored",
            reason=(
                f"the database was restored to event #{head_id}; "
                f"{len(names)} checkpoint(s) of events after it were set aside"
            ),
            data={
                "head_id": head_id,
                "set_aside": list(names),
                "directory": directory.name if directory is not None else None,
                "newest_set_aside": max((c.checkpoint.head_id for c in beyond), default=None),
            },
        )
    stored = audit_checkpoint_write()
    return RestoreRecorded(
        head_id=head_id,
        set_aside=names,
        directory=directory,
        checkpoint=stored.name if stored is not None else None,
    )


def _after_the_backup(checkpoints: list[StoredCheckpoint]) -> list[StoredCheckpoint]:
    """Checkpoints of events the restored log never had: their head event is missing, or
    was written after the checkpoint was (the log went on from the backup, reusing ids).
    An event changed in place keeps its time and fails its keyed hash instead."""
    heads = {c.checkpoint.head_id for c in checkpoints}
    written = dict(AuditEvent.objects.filter(id__in=heads).values_list("id", "created_at"))
    beyond = []
    for stored in checkpoints:
        at = written.get(stored.checkpoint.head_id)
        if at is None or at > _at(stored):
            beyond.append(stored)
    return beyond


def _at(stored: StoredCheckpoint) -> datetime:
    return datetime.fromisoformat(stored.checkpoint.created_at)


def _set_aside(checkpoints: list[StoredCheckpoint]) -> Path:
    base = checkpoint_dir()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    directory = base / f"superseded-{stamp}"
    directory.mkdir(mode=0o700)
    for stored in checkpoints:
        os.rename(base / stored.name, directory / stored.name)
    return directory


def _put_back(checkpoints: list[StoredCheckpoint], directory: Path) -> None:
    base = checkpoint_dir()
    for stored in checkpoints:
        os.rename(directory / stored.name, base / stored.name)
    directory.rmdir()
