"""manage.py synthorg_audit verify: an untouched keyed chain passes, before and after a
key rotation; each way a database writer without the key could rewrite history is named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.utils import timezone

from audit_app.chain import (
    AUDIT_CHAIN_KEYED,
    AUDIT_KEY_ROTATED,
    CHAINED_FIELDS,
    GENESIS_HASH,
    AuditChainUnkeyedError,
    AuditKey,
    event_hash,
    keyed_event_hash,
)
from audit_app.checkpoint import audit_checkpoint_write
from audit_app.keys import audit_key_ring, audit_keys_configured, key_file
from audit_app.models import AuditEvent, AuditVerification
from audit_app.record import Actor, audit_record
from audit_app.verify import audit_chain_verify
from common.testing import run_at_once
from trust_app.services.agents import agent_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def checkpoint_dir(settings: Any, tmp_path: Path) -> Path:
    """Each test keeps its checkpoints apart: they describe this test's log alone."""
    settings.SYNTHORG_AUDIT_CHECKPOINT_DIR = str(tmp_path / "checkpoints")
    return tmp_path / "checkpoints"


def _record(n: int, name: str = "chained") -> list[AuditEvent]:
    agent = agent_create(name=f"{name}-{AuditEvent.objects.count()}", access_level="standard").agent
    events = []
    for i in range(n):
        with transaction.atomic():
            events.append(
                audit_record(kind="invocation.decided", actor=Actor.agent(agent), agent=agent,
                             tool="read_file", outcome="allow", reason=f"call {i}",
                             data={"trace": ["a", "b"], "n": i})
            )  # fmt: skip
    return events


@pytest.fixture
def chain() -> list[AuditEvent]:
    return _record(5)


def _verify_fails() -> str:
    with pytest.raises(CommandError) as failure:
        call_command("synthorg_audit", "verify")
    assert failure.value.returncode == 1
    return str(failure.value)


def _chained_row(event_id: int) -> dict[str, Any]:
    row = AuditEvent.objects.values(*CHAINED_FIELDS).get(id=event_id)
    return {
        **row,
        "created_at": row["created_at"].isoformat(),
        "agent_id": str(row["agent_id"]) if row["agent_id"] else None,
        "invocation_id": str(row["invocation_id"]) if row["invocation_id"] else None,
    }


def test_an_untouched_keyed_chain_verifies(
    chain: list[AuditEvent], capsys: pytest.CaptureFixture
) -> None:
    events = AuditEvent.objects.count()
    call_command("synthorg_audit", "verify")
    out = capsys.readouterr().out
    assert "audit chain intact" in out
    assert f"{events} event(s)" in out
    # The result is recorded for the audit pages, and in the log.
    run = AuditVerification.objects.get()
    assert run.status == "passed" and run.requested_by == "synthorg_audit verify"
    assert AuditEvent.objects.filter(kind="audit.verified", outcome="passed").count() == 1
    ring = audit_key_ring()
    assert {e.key_id for e in AuditEvent.objects.all()} == {ring.newest.id}
    assert key_file().stat().st_mode & 0o777 == 0o600


def test_a_row_changed_with_raw_sql_is_named(chain: list[AuditEvent]) -> None:
    victim = chain[2]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE tools_app_auditevent SET reason = %s WHERE id = %s", ["nothing", victim.id]
        )
    problem = _verify_fails()
    assert f"audit event #{victim.id} " in problem
    assert "contents do not match its hash under audit key" in problem
    # The failed run is recorded for the audit pages, naming the same event.
    run = AuditVerification.objects.get()
    assert run.status == "failed" and run.first_bad_event == victim.id
    assert run.summary == problem
    assert AuditEvent.objects.filter(kind="audit.verified", outcome="failed").count() == 1


def test_without_usable_keys_verify_refuses_with_the_reason(
    chain: list[AuditEvent], settings: Any, capsys: pytest.CaptureFixture
) -> None:
    """Fail closed: in production with no SYNTHORG_AUDIT_KEYS nothing can be judged."""
    mode, keys = settings.SYNTHORG_ENV, settings.SYNTHORG_AUDIT_KEYS
    settings.SYNTHORG_ENV, settings.SYNTHORG_AUDIT_KEYS = "production", []
    problem = _verify_fails()
    assert problem.startswith("the audit keys cannot be used: set SYNTHORG_AUDIT_KEYS")
    assert not AuditVerification.objects.exists()
    # Positive control: with the keys back, the same log verifies.
    settings.SYNTHORG_ENV, settings.SYNTHORG_AUDIT_KEYS = mode, keys
    call_command("synthorg_audit", "verify")
    assert "audit chain intact" in capsys.readouterr().out


def test_changed_data_is_caught_too(chain: list[AuditEvent]) -> None:
    victim = chain[4]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE tools_app_auditevent SET data = %s WHERE id = %s",
            ['{"trace": ["a", "b"], "n": 99}', victim.id],
        )
    assert f"#{victim.id} " in _verify_fails()


def test_a_rewrite_with_later_hashes_recomputed_without_the_key_is_named(
    chain: list[AuditEvent],
) -> None:
    """A writer who knows the hash scheme but not the key rewrites a row and recomputes
    every hash after it: as plain SHA-256, or as an HMAC under a key of their own."""
    victim = chain[1]
    guessed = AuditKey(chain[0].key_id, b"x" * 40)  # the key id is public; the secret is not
    for scheme in ("plain", "guessed key"):
        prev = AuditEvent.objects.get(id=chain[0].id).hash
        for event in chain[1:]:
            fields = _chained_row(event.id)
            if event.id == victim.id:
                fields["reason"] = f"rewritten ({scheme})"
            digest = (
                event_hash(prev, fields)
                if scheme == "plain"
                else keyed_event_hash(guessed, prev, fields)
            )
            AuditEvent.objects.filter(id=event.id).update(
                reason=fields["reason"],
                prev_hash=prev,
                hash=digest,
                key_id="" if scheme == "plain" else guessed.id,
            )
            prev = digest
        problem = _verify_fails()
        assert problem.startswith(f"audit event #{victim.id} "), problem
        expected = "plain, unkeyed hash" if scheme == "plain" else "under audit key"
        assert expected in problem


def test_a_deleted_middle_row_is_named_with_the_gap(chain: list[AuditEvent]) -> None:
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM tools_app_auditevent WHERE id = %s", [chain[2].id])
    problem = _verify_fails()
    assert problem.startswith(f"audit event #{chain[3].id} ")
    assert f"events between #{chain[1].id} and #{chain[3].id} were removed" in problem


def test_two_swapped_rows_are_named(chain: list[AuditEvent]) -> None:
    columns = [*CHAINED_FIELDS, "prev_hash", "hash", "key_id"]
    first, second = (AuditEvent.objects.values(*columns).get(id=e.id) for e in chain[1:4:2])
    AuditEvent.objects.filter(id=chain[1].id).update(hash="swap")
    AuditEvent.objects.filter(id=chain[3].id).update(**first)
    AuditEvent.objects.filter(id=chain[1].id).update(**second)
    assert f"audit event #{chain[1].id} " in _verify_fails()


def test_dropped_newest_rows_are_named_by_the_checkpoint(
    chain: list[AuditEvent], checkpoint_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    stored = audit_checkpoint_write()
    assert stored is not None and stored.checkpoint.head_id == chain[-1].id
    assert stored.checkpoint.count == AuditEvent.objects.count()
    # Positive control: with the checkpoint and events after it, the log verifies.
    _record(2, "later")
    call_command("synthorg_audit", "verify")
    assert "1 checkpoint(s) matched" in capsys.readouterr().out
    assert checkpoint_dir.stat().st_mode & 0o777 == 0o700
    assert (checkpoint_dir / stored.name).stat().st_mode & 0o777 == 0o600
    # Dropping events past the checkpoint's head cannot be seen; dropping the head can.
    survivors = AuditEvent.objects.filter(id__lt=chain[-2].id).count()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM tools_app_auditevent WHERE id >= %s", [chain[-2].id])
    problem = _verify_fails()
    assert "the newest audit events are missing" in problem
    assert f"missing: events #{chain[-3].id + 1} to #{chain[-1].id}" in problem
    assert f"ends at #{chain[-3].id} with {survivors}" in problem


def test_a_forged_checkpoint_is_named(chain: list[AuditEvent], checkpoint_dir: Path) -> None:
    stored = audit_checkpoint_write()
    assert stored is not None
    path = checkpoint_dir / stored.name
    record = json.loads(path.read_text())
    record["count"] -= 1
    path.write_text(json.dumps(record))
    assert f"checkpoint {stored.name}: its signature does not verify" in _verify_fails()


def test_after_a_key_rotation_old_and_new_events_verify(
    chain: list[AuditEvent], capsys: pytest.CaptureFixture
) -> None:
    old = audit_key_ring().newest.id
    call_command("synthorg_audit", "rotate-key")
    new = audit_key_ring().newest.id
    assert new != old and f"audit key {new}" in capsys.readouterr().out
    later = _record(3, "rotated")
    rotation = AuditEvent.objects.get(kind=AUDIT_KEY_ROTATED)
    assert rotation.key_id == new and rotation.data["previous_key_id"] == old
    assert {e.key_id for e in AuditEvent.objects.filter(id__in=[x.id for x in later])} == {new}
    call_command("synthorg_audit", "checkpoint")
    call_command("synthorg_audit", "verify")
    assert "audit chain intact" in capsys.readouterr().out
    # Fail closed: without the old key the events it keyed cannot be judged.
    path = key_file()
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\n")
    problem = _verify_fails()
    assert f"keyed with audit key {old!r}, which is not among the configured keys" in problem
    path.write_text("\n".join(lines) + "\n")


def test_unkeyed_history_is_kept_and_the_switch_is_marked(
    capsys: pytest.CaptureFixture, settings: Any, tmp_path: Path
) -> None:
    """Events from before the chain was keyed keep their plain hashes; one marker event
    starts the keyed part, and later plain-hashed rows are refused."""
    with connection.cursor() as cursor:  # a log that starts before the keyed chain
        cursor.execute("DELETE FROM tools_app_auditevent")
    prev = GENESIS_HASH
    legacy_events = []
    for i in range(3):
        event = AuditEvent(
            created_at=timezone.now(),
            kind="invocation.decided", actor_type="system", actor_name="system",
            reason=f"old {i}", data={"n": i},
        )  # fmt: skip
        fields = {name: getattr(event, name) for name in CHAINED_FIELDS}
        fields["created_at"] = fields["created_at"].isoformat()
        event.prev_hash, event.hash = prev, event_hash(prev, fields)
        legacy_events.append(event)
        prev = event.hash
    AuditEvent.objects.bulk_create(legacy_events)
    # With a key configured an all-unkeyed log is refused (see the downgrade test); a
    # console with no key yet (an empty var/) verifies it and says it is unkeyed.
    settings.VAR_DIR = str(tmp_path / "fresh-var")
    assert not audit_keys_configured()
    call_command("synthorg_audit", "verify")
    assert "no keyed events: the log is unkeyed" in capsys.readouterr().out
    fresh = _record(2, "after-switch")
    marker = AuditEvent.objects.get(kind=AUDIT_CHAIN_KEYED)
    assert marker.prev_hash == prev and marker.id < fresh[0].id and marker.key_id
    call_command("synthorg_audit", "verify")
    assert f"keyed from event #{marker.id}" in capsys.readouterr().out
    # A writer without the key appends a plain-hashed event after the switch.
    head = AuditEvent.objects.order_by("-id").first()
    assert head is not None
    forged = AuditEvent(
        created_at=head.created_at, kind="invocation.decided", actor_type="system",
        actor_name="system", reason="forged", data={},
    )  # fmt: skip
    fields = {name: getattr(forged, name) for name in CHAINED_FIELDS}
    fields["created_at"] = fields["created_at"].isoformat()
    forged.prev_hash, forged.hash = head.hash, event_hash(head.hash, fields)
    (forged,) = AuditEvent.objects.bulk_create([forged])
    problem = _verify_fails()
    assert problem.startswith(f"audit event #{forged.id} ")
    assert f"keyed from event #{marker.id}" in problem


@pytest.mark.django_db(transaction=True)
def test_writers_racing_on_their_own_connections_keep_one_chain() -> None:
    """Each writer locks the chain and reads its head in one round trip; none forks it."""
    agent = agent_create(name="racing", access_level="standard").agent
    writers, each = 6, 15

    def write(n: int) -> None:
        for i in range(each):
            with transaction.atomic():
                audit_record(
                    kind="invocation.decided",
                    actor=Actor.agent(agent),
                    agent=agent,
                    reason=f"writer {n} call {i}",
                )

    run_at_once(writers, write)
    events = list(AuditEvent.objects.filter(agent_id=agent.id, kind="invocation.decided"))
    assert len(events) == writers * each
    hashes = list(AuditEvent.objects.order_by("id").values_list("prev_hash", "hash"))
    assert all(prev == hashes[i - 1][1] for i, (prev, _) in enumerate(hashes) if i)
    report = audit_chain_verify()
    assert report.problem is None and report.checked == len(hashes), report


def test_beat_writes_checkpoints_at_the_configured_interval(
    chain: list[AuditEvent], checkpoint_dir: Path
) -> None:
    from django.conf import settings

    from audit_app.tasks import audit_checkpoint
    from synthorg_site.celery import app

    entry = app.conf.beat_schedule["audit-checkpoint"]
    assert entry["task"] == "tools_app.audit_checkpoint"
    assert entry["schedule"] == settings.SYNTHORG_AUDIT_CHECKPOINT_SECONDS
    first = audit_checkpoint()
    assert first is not None and first.endswith(f"-{chain[-1].id:020d}.json")
    assert audit_checkpoint() is None  # the head has not moved: no second file
    _record(1, "moved")
    second = audit_checkpoint()
    assert second is not None and second > first
    assert sorted(p.name for p in checkpoint_dir.iterdir()) == [first, second]


def _rehash_unkeyed(from_id: int = 0) -> list[int]:
    """What a database writer without the key can do: re-hash events from `from_id` on
    with plain SHA-256 and empty their key ids, so the chain links up again."""
    rows = list(AuditEvent.objects.order_by("id"))
    prev = GENESIS_HASH
    changed = []
    with connection.cursor() as cursor:
        for row in rows:
            if row.id < from_id:
                prev = row.hash
                continue
            digest = event_hash(prev, _chained_row(row.id))
            cursor.execute(
                "UPDATE tools_app_auditevent SET prev_hash = %s, hash = %s, key_id = '' "
                "WHERE id = %s",
                [prev, digest, row.id],
            )
            changed.append(row.id)
            prev = digest
    return changed


def test_a_log_rehashed_without_the_key_is_refused_while_keys_are_configured(
    chain: list[AuditEvent], capsys: pytest.CaptureFixture
) -> None:
    """Downgrade: the whole log re-hashed with plain SHA-256 and its key ids emptied, with
    no checkpoint to betray it, is refused because a key is configured."""
    call_command("synthorg_audit", "verify")  # positive control: the keyed log is intact
    assert "keyed from event #" in capsys.readouterr().out
    AuditVerification.objects.all().delete()
    changed = _rehash_unkeyed()
    assert audit_keys_configured()
    problem = _verify_fails()
    assert problem.startswith("the audit log is not keyed although audit keys are configured")
    assert f"#{changed[0]} to #{changed[-1]}" in problem and "downgrade" in problem
    run = AuditVerification.objects.get()
    assert run.status == "failed" and run.first_bad_event == changed[0]
    assert run.summary == problem
    # No event may launder the rewrite: a keyed event appended now (after a marker) would
    # make the re-hashed events verify as pre-key history. The console refuses to record.
    with (
        pytest.raises(AuditChainUnkeyedError, match="synthorg_audit start-keyed"),
        transaction.atomic(),
    ):
        audit_record(kind="invocation.decided", actor=Actor.system(), reason="after")
    assert not AuditEvent.objects.exclude(key_id="").exists()
    assert _verify_fails() == problem  # still refused, the same way
    # Positive control: a person who has checked the unkeyed events accepts them as
    # history; from the marker on, events are keyed again and the log verifies.
    call_command("synthorg_audit", "start-keyed")
    marker = AuditEvent.objects.get(kind=AUDIT_CHAIN_KEYED)
    assert marker.actor_name == "synthorg_audit start-keyed" and marker.key_id
    capsys.readouterr()
    call_command("synthorg_audit", "verify")
    assert f"keyed from event #{marker.id}" in capsys.readouterr().out


def test_unkeyed_events_after_the_first_keyed_one_are_refused(chain: list[AuditEvent]) -> None:
    """Downgrade of the tail: events after the first keyed one re-hashed without the key."""
    assert audit_chain_verify().ok  # positive control
    changed = _rehash_unkeyed(from_id=chain[2].id)
    report = audit_chain_verify()
    assert report.first_bad_event == chain[2].id
    assert report.problem is not None
    assert report.problem.startswith(f"audit event #{chain[2].id} ")
    assert "plain, unkeyed hash (no key id)" in report.problem and "downgrade" in report.problem
    assert changed[0] == chain[2].id
