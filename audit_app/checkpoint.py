"""Signed checkpoints of the audit chain's head, kept outside the database.

A checkpoint records the newest event's id and hash, how many events the log held
up to it, and when, signed with an HMAC under the newest audit key. The chain alone
cannot show that its newest rows were dropped (what remains still links up); a
checkpoint written before they were dropped can. HMAC rather than a signature
scheme: whoever verifies the chain already holds the audit keys, and one secret to
keep, rotate and back up is simpler than two.

Files are never rewritten: each is created once (O_EXCL) under a name that sorts by
time, ``<UTC time>-<head id>.json``, in a private (0700) directory.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.db import transaction

from audit_app.chain import (
    AuditKeyRing,
    Checkpoint,
    checkpoint_signature,
    hashes_equal,
)
from audit_app.keys import audit_key_ring
from audit_app.models import AuditEvent
from common.platform.private_state import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE


@dataclass(frozen=True)
class StoredCheckpoint:
    name: str
    checkpoint: Checkpoint


def checkpoint_dir() -> Path:
    path = Path(settings.SYNTHORG_AUDIT_CHECKPOINT_DIR)
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    return path


def audit_checkpoint_write(*, now: datetime | None = None) -> StoredCheckpoint | None:
    """Write a checkpoint of the current head; None when the log is empty or has not
    moved since the newest checkpoint."""
    key = audit_key_ring().newest
    with transaction.atomic():
        head = AuditEvent.objects.order_by("-id").values_list("id", "hash").first()
        if head is None:
            return None
        count = AuditEvent.objects.filter(id__lte=head[0]).count()
    directory = checkpoint_dir()
    newest = _newest_name(directory)
    if newest is not None and newest.endswith(f"-{head[0]:020d}.json"):
        return None
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    checkpoint = Checkpoint(
        head_id=head[0],
        head_hash=head[1],
        count=count,
        created_at=moment.isoformat(),
        key_id=key.id,
    )
    name = f"{moment.strftime('%Y%m%dT%H%M%S.%fZ')}-{head[0]:020d}.json"
    record = {
        **json.loads(checkpoint.signed_body()),
        "signature": checkpoint_signature(key, checkpoint),
    }
    fd = os.open(directory / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(record, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return StoredCheckpoint(name, checkpoint)


def _newest_name(directory: Path) -> str | None:
    names = sorted(entry.name for entry in os.scandir(directory) if entry.name.endswith(".json"))
    return names[-1] if names else None


def checkpoints_read(ring: AuditKeyRing | None) -> tuple[list[StoredCheckpoint], list[str]]:
    """Every checkpoint whose signature verifies, and a problem for each that does not
    (each, when no audit key is configured to check them)."""
    directory = Path(settings.SYNTHORG_AUDIT_CHECKPOINT_DIR)
    if not directory.is_dir():
        return [], []
    found: list[StoredCheckpoint] = []
    problems: list[str] = []
    for name in sorted(e.name for e in os.scandir(directory) if e.name.endswith(".json")):
        try:
            record = json.loads((directory / name).read_text())
            checkpoint = Checkpoint(
                head_id=int(record["head_id"]),
                head_hash=str(record["head_hash"]),
                count=int(record["count"]),
                created_at=str(record["created_at"]),
                key_id=str(record["key_id"]),
            )
            signature = str(record["signature"])
        except (OSError, ValueError, KeyError, TypeError):
            problems.append(f"checkpoint {name}: unreadable (not a checkpoint this console wrote)")
            continue
        key = ring.get(checkpoint.key_id) if ring is not None else None
        if key is None:
            problems.append(
                f"checkpoint {name}: signed with audit key {checkpoint.key_id!r}, which is not "
                "among the configured keys"
            )
        elif not hashes_equal(checkpoint_signature(key, checkpoint), signature):
            problems.append(
                f"checkpoint {name}: its signature does not verify (the file was changed or forged)"
            )
        else:
            found.append(StoredCheckpoint(name, checkpoint))
    return found, problems
