"""Audit chain verification at scale: 1,000,000 keyed events and signed checkpoints.

Writes the events straight into PostgreSQL with COPY, each hashed exactly as
audit_record hashes it (HMAC-SHA256 under an audit key, chained to the one before),
the first half under an older key and the rest under a newer one (a rotation), with a
signed checkpoint every 100,000 events in a private directory. Then runs the same
verification as `manage.py synthorg_audit verify` and reports events per second and
the peak resident memory of this process while it ran (the kernel's VmHWM, reset just
before through /proc/self/clear_refs), which stays flat however many events there are.

Needs PostgreSQL (DATABASE_URL): `make bench` provides a private one. The benchmark
empties the audit table of that database first (it is the benchmark's own).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")
EVENTS = int(os.environ.get("SYNTHORG_BENCH_AUDIT_EVENTS", "1000000"))
CHECKPOINT_EVERY = max(1, EVENTS // 10)
COPY_BATCH = 20_000

from audit_app.chain import new_audit_key  # noqa: E402  (pure: no Django needed)

_OLD, _NEW = new_audit_key(), new_audit_key()
# Both keys are made in the same second: the suffix keeps their ids apart and in age order.
_NEW = type(_NEW)(_NEW.id + "n", _NEW.secret)
os.environ["SYNTHORG_AUDIT_KEYS"] = ",".join(f"{k.id}:{k.secret.decode()}" for k in (_NEW, _OLD))
_checkpoints = tempfile.mkdtemp(prefix="bench-audit-checkpoints-")
os.environ["SYNTHORG_AUDIT_CHECKPOINT_DIR"] = _checkpoints

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from audit_app.chain import (  # noqa: E402
    GENESIS_HASH,
    Checkpoint,
    checkpoint_signature,
    keyed_event_hash,
)
from audit_app.verify import audit_chain_verify  # noqa: E402

COLUMNS = (
    "id", "created_at", "kind", "actor_type", "actor_id", "actor_name", "agent_id",
    "agent_name", "invocation_id", "tool", "category", "action_type", "arguments_hash",
    "outcome", "status", "reason", "rule", "duration_ms", "request_id", "data",
    "prev_hash", "hash", "key_id",
)  # fmt: skip


def _fields(i: int, start: datetime) -> dict[str, object]:
    return {
        "created_at": start + timedelta(milliseconds=2592 * i),
        "kind": "invocation.finished" if i % 3 == 0 else "invocation.decided",
        "actor_type": "agent",
        "actor_id": str(i % 50),
        "actor_name": f"bench-agent-{i % 50}",
        "agent_id": None,
        "agent_name": f"bench-agent-{i % 50}",
        "invocation_id": str(uuid.UUID(int=i // 3 + 1)),
        "tool": f"bench_tool_{i % 20}",
        "category": "file_system",
        "action_type": "file:read",
        "arguments_hash": f"{i:064x}",
        "outcome": ("allow", "allow", "deny", "require_approval")[i % 4],
        "status": ("queued", "succeeded", "denied", "pending_approval")[i % 4],
        "reason": "level standard permits the category",
        "rule": "level",
        "duration_ms": i % 5000,
        "request_id": f"req-{i}",
        "data": {"trace": ["step one", "step two"], "n": i},
    }


def _write_checkpoint(head_id: int, head_hash: str, count: int, at: datetime) -> None:
    mark = Checkpoint(head_id, head_hash, count, at.isoformat(), _NEW.id)
    record = {**json.loads(mark.signed_body()), "signature": checkpoint_signature(_NEW, mark)}
    name = f"{at.strftime('%Y%m%dT%H%M%S.%fZ')}-{head_id:020d}.json"
    (Path(_checkpoints) / name).write_text(json.dumps(record, sort_keys=True) + "\n")


def generate() -> float:
    """Insert EVENTS chained, keyed events; seconds taken."""
    started = time.perf_counter()
    start = datetime.now(UTC) - timedelta(days=30)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE tools_app_auditevent RESTART IDENTITY")
    raw = connection.connection
    prev = GENESIS_HASH
    for batch_start in range(0, EVENTS, COPY_BATCH):
        with (
            raw.cursor() as cursor,
            cursor.copy(f"COPY tools_app_auditevent ({', '.join(COLUMNS)}) FROM STDIN") as copy,
        ):
            for i in range(batch_start, min(batch_start + COPY_BATCH, EVENTS)):
                key = _OLD if i < EVENTS // 2 else _NEW
                fields = _fields(i, start)
                chained = {**fields, "created_at": fields["created_at"].isoformat()}  # type: ignore[attr-defined]
                digest = keyed_event_hash(key, prev, chained)
                copy.write_row(
                    (i + 1, *(fields[c] if c != "data" else json.dumps(fields[c])
                              for c in COLUMNS[1:20]), prev, digest, key.id)
                )  # fmt: skip
                prev = digest
                if (i + 1) % CHECKPOINT_EVERY == 0:
                    _write_checkpoint(i + 1, digest, i + 1, start + timedelta(seconds=i))
        raw.commit()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence('tools_app_auditevent', 'id'), %s)", [EVENTS]
        )
        cursor.execute("ANALYZE tools_app_auditevent")
    return time.perf_counter() - started


def _vm(name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


def main() -> int:
    if connection.vendor != "postgresql":
        print("bench_audit_verify needs PostgreSQL (DATABASE_URL)", file=sys.stderr)
        return 1
    generated = generate()
    print(f"generated {EVENTS:,} events in {generated:.1f}s", file=sys.stderr)
    with contextlib.suppress(OSError):  # where it cannot be written, VmHWM is since start
        Path("/proc/self/clear_refs").write_text("5")
    rss_before = _vm("VmRSS")
    started = time.perf_counter()
    report = audit_chain_verify()
    seconds = time.perf_counter() - started
    peak = _vm("VmHWM")
    if not report.ok or report.checked != EVENTS:
        print(f"verification failed: {report.summary()}", file=sys.stderr)
        return 1
    print(
        json.dumps(
            {
                "figure": f"audit verify: {EVENTS:,} keyed events, 2 keys, "
                f"{report.checkpoints} checkpoints",
                "unit": "events/s",
                "rate": round(EVENTS / seconds, 1),
                "note": f"{seconds:.1f} s; peak RSS {peak / 1024:.0f} MB "
                f"(at start {rss_before / 1024:.0f} MB)",
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
