"""common/db_rows: statements compiled once, writing exactly what the ORM writes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import DataError, IntegrityError, transaction
from django.db.models import F

from audit_app.models import AuditEvent, AuditSubject
from common.db_rows import insert_instance, insert_with_child, update_if_among
from tools_app.models import Invocation
from trust_app.models import Agent

pytestmark = pytest.mark.django_db

AT = datetime(2026, 11, 28, 12, 30, 5, 123456, tzinfo=UTC)
# Every kind of column a transition sets: text, JSON (nested, unicode), time, booleans,
# numbers, and NULLs.
VALUES: dict[str, Any] = {
    "status": "succeeded",
    "finished_at": AT,
    "updated_at": AT,
    "is_error": False,
    "content": "line one\nline 'two' \"quoted\" ünïcødé",
    "raw_content": "raw\r\n",
    "structured": {"rows": [1, 2.5, None, True], "name": "é", "nested": {"a": []}},
    "exit_code": 0,
    "truncated": True,
    "batch_max_concurrency": None,
    "worker": "celery@host",
}


def _invocation(agent: Agent, status: str = "running") -> Invocation:
    return Invocation.objects.create(
        agent=agent, tool="read_file", category="file_system", action_type="file:read",
        safety_class="read", arguments={"path": "notes.txt"}, arguments_hash="0" * 64,
        status=status,
    )  # fmt: skip


def _columns(invocation: Invocation) -> dict[str, Any]:
    row = Invocation.objects.filter(id=invocation.id).values(*VALUES).get()
    return dict(row)


@pytest.fixture
def agent() -> Agent:
    return Agent.objects.create(name=f"rows-{uuid.uuid4().hex[:6]}", access_level="standard")


def test_an_update_writes_what_the_orm_writes(agent: Agent) -> None:
    ours, theirs = _invocation(agent), _invocation(agent)
    changed = update_if_among(
        Invocation, pk=ours.id, field="status", among=["queued", "running"], values=VALUES
    )
    updated = Invocation.objects.filter(id=theirs.id, status__in=["queued", "running"]).update(
        **VALUES
    )
    assert changed == updated == 1
    assert _columns(ours) == _columns(theirs)
    assert _columns(ours)["structured"] == VALUES["structured"]
    assert _columns(ours)["finished_at"] == AT


def test_a_row_no_longer_among_the_statuses_is_left_alone(agent: Agent) -> None:
    # The compare-and-set: the loser of a race changes nothing (the control above moves).
    finished = _invocation(agent, status="cancelled")
    before = _columns(finished)
    changed = update_if_among(
        Invocation, pk=finished.id, field="status", among=["queued", "running"], values=VALUES
    )
    assert changed == 0
    assert _columns(finished) == before
    missing = update_if_among(
        Invocation, pk=uuid.uuid4(), field="status", among=["running"], values=VALUES
    )
    assert missing == 0


def test_expressions_and_empty_choices_are_left_to_the_orm(agent: Agent) -> None:
    invocation = _invocation(agent)
    counted = {"attempts": F("attempts") + 1}
    among = ["running"]
    assert update_if_among(Invocation, pk=invocation.id, field="status", among=among,
                           values=counted) is None  # fmt: skip
    assert update_if_among(Invocation, pk=invocation.id, field="status", among=[],
                           values={}) is None  # fmt: skip
    assert Invocation.objects.get(id=invocation.id).attempts == 0


def test_the_key_and_what_is_not_a_column_cannot_be_set(agent: Agent) -> None:
    invocation = _invocation(agent)
    reverse = Invocation._meta.related_objects[0].name  # a relation, not a column
    for values in ({"id": uuid.uuid4()}, {reverse: 1}):
        with pytest.raises(ValueError):
            update_if_among(
                Invocation, pk=invocation.id, field="status", among=["running"], values=values
            )


@pytest.mark.django_db(transaction=True)
def test_a_failed_update_marks_its_transaction_for_rollback(agent: Agent) -> None:
    invocation = _invocation(agent)
    with pytest.raises(IntegrityError), transaction.atomic():
        try:
            update_if_among(
                Invocation, pk=invocation.id, field="status", among=["running"],
                values={"agent_id": uuid.uuid4()},  # no such agent
            )  # fmt: skip
        except IntegrityError:
            # Caught inside the block, as QuerySet.update's callers may: the transaction
            # still cannot commit a half-done change.
            assert transaction.get_connection().needs_rollback
            raise
    assert Invocation.objects.get(id=invocation.id).agent_id == agent.id


def _event(agent: Agent, digest: str = "2" * 64) -> AuditEvent:
    return AuditEvent(
        created_at=AT, kind="invocation.decided", actor_type="agent", actor_id=str(agent.id),
        actor_name=agent.name, agent_id=agent.id, agent_name=agent.name,
        invocation_id=uuid.UUID(int=7), tool="read_file", category="file_system",
        action_type="file:read", arguments_hash="0" * 64, outcome="allow", status="queued",
        reason="quoted 'text' and ünïcødé", rule="", duration_ms=None, request_id="r-1",
        data={"trace": ["a", "é"], "nested": {"n": [1, None]}}, prev_hash="1" * 64,
        hash=digest, key_id="k1",
    )  # fmt: skip


def _rows(event: AuditEvent) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    columns = AuditEvent.objects.filter(id=event.id).values().get()
    subjects = AuditSubject.objects.filter(event_id=event.id).values(
        "invocation_id", "kind", "value"
    )
    rows = [dict(row) for row in subjects]
    return {k: v for k, v in columns.items() if k not in ("id", "hash")}, rows


def test_a_row_and_its_child_in_one_statement_are_what_two_inserts_write(agent: Agent) -> None:
    ours, theirs = _event(agent), _event(agent, "3" * 64)
    our_subject = AuditSubject(
        event=ours, invocation_id=ours.invocation_id, kind="path", value="a/b"
    )
    insert_with_child(ours, our_subject, "event")
    insert_instance(theirs)
    insert_instance(
        AuditSubject(event=theirs, invocation_id=theirs.invocation_id, kind="path", value="a/b")
    )
    assert ours.id is not None and our_subject.id is not None
    assert our_subject.event_id == ours.id and our_subject.event is ours
    assert not ours._state.adding and not our_subject._state.adding
    assert _rows(ours) == _rows(theirs)
    assert len(_rows(ours)[1]) == 1


@pytest.mark.django_db(transaction=True)
def test_a_child_that_fails_leaves_no_parent_and_marks_the_transaction(agent: Agent) -> None:
    """One statement: a child the database refuses takes its parent with it, and the
    transaction cannot commit half of the change even when the caller catches the error."""
    event = _event(agent)
    too_long = AuditSubject(event=event, invocation_id=None, kind="path", value="x" * 10_000)
    before = AuditEvent.objects.count()
    with pytest.raises(DataError), transaction.atomic():
        try:
            insert_with_child(event, too_long, "event")
        except DataError:
            assert transaction.get_connection().needs_rollback
            raise
    assert AuditEvent.objects.count() == before
