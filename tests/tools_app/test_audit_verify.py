"""manage.py synthorg_audit verify: a good chain passes; a tampered row is named."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction

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
