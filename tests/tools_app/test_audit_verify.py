"""manage.py synthorg_audit verify: a good chain passes; a tampered row is named."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction

from common.testing import run_at_once
from tools_app.audit_verify import audit_chain_verify
from tools_app.models import AuditEvent
from tools_app.services.audit import Actor, audit_record
from trust_app.services import agent_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain() -> list[AuditEvent]:
    agent = agent_create(name="chained", access_level="standard").agent
    events = []
    for i in range(5):
        with transaction.atomic():
            events.append(
                audit_record(kind="invocation.decided", actor=Actor.agent(agent), agent=agent,
                             tool="read_file", outcome="allow", reason=f"call {i}",
                             data={"trace": ["a", "b"], "n": i})
            )  # fmt: skip
    return events


def test_an_intact_chain_verifies(chain: list[AuditEvent], capsys: pytest.CaptureFixture) -> None:
    call_command("synthorg_audit", "verify")
    out = capsys.readouterr().out
    assert "audit chain intact" in out
    assert f"{AuditEvent.objects.count()} event(s)" in out


def test_a_row_changed_with_raw_sql_is_named(chain: list[AuditEvent]) -> None:
    victim = chain[2]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE tools_app_auditevent SET reason = %s WHERE id = %s", ["nothing", victim.id]
        )
    with pytest.raises(CommandError) as failure:
        call_command("synthorg_audit", "verify")
    assert failure.value.returncode == 1
    assert f"audit event #{victim.id} " in str(failure.value)
    assert "contents do not match" in str(failure.value)


def test_changed_data_is_caught_too(chain: list[AuditEvent]) -> None:
    victim = chain[4]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE tools_app_auditevent SET data = %s WHERE id = %s",
            ['{"trace": ["a", "b"], "n": 99}', victim.id],
        )
    with pytest.raises(CommandError, match=f"#{victim.id} "):
        call_command("synthorg_audit", "verify")


def test_a_deleted_row_breaks_the_link_of_the_next(chain: list[AuditEvent]) -> None:
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM tools_app_auditevent WHERE id = %s", [chain[1].id])
    with pytest.raises(CommandError) as failure:
        call_command("synthorg_audit", "verify")
    assert f"audit event #{chain[2].id} " in str(failure.value)
    assert "prev_hash" in str(failure.value)


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
