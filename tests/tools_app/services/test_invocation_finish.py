"""A call's end: the audit rows its tool left are written in the transaction that settles
it, just before its `invocation.finished`; and written too when it was settled elsewhere."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from unittest import mock

import pytest

import tools_app.services.invocation_dispatch as dispatch
from audit_app.models import AuditEvent
from audit_app.record import Actor, AuditEntry
from tools_app.models import Invocation, InvocationStatus
from tools_app.services.invocation_claim import invocation_claim
from tools_app.services.invocation_execute import _finish
from tools_app.services.invocation_outcome import Settled
from tools_app.services.invocation_submit import CallRequest, invocation_submit
from trust_app.services.agents import agent_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _no_queue() -> Iterator[None]:
    with mock.patch.object(dispatch, "enqueue_invocation", lambda invocation: None):
        yield


def _running_call() -> Invocation:
    agent = agent_create(name=f"finish-{uuid.uuid4().hex[:10]}", access_level="standard").agent
    call = CallRequest(tool="test_echo", arguments={"text": "hi"})
    submitted = invocation_submit(agent=agent, call=call).invocation
    claimed = invocation_claim(invocation_id=submitted.id, worker="worker-1")
    assert claimed is not None
    return claimed


def _left(invocation: Invocation) -> AuditEntry:
    """A row as a tool leaves it (the bridge's upstream call): no agent."""
    return {
        "kind": "mcp.call",
        "actor": Actor.system("mcp-bridge"),
        "invocation_id": invocation.id,
        "tool": invocation.tool,
        "outcome": "ok",
        "data": {"server": "probe"},
    }


def _rows(invocation: Invocation) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(invocation_id=invocation.id).order_by("id"))


def test_the_rows_a_tool_left_come_just_before_the_calls_end() -> None:
    invocation = _running_call()
    settled = Settled(
        status=InvocationStatus.SUCCEEDED, is_error=False, content="hi", audit=(_left(invocation),)
    )
    _finish(invocation=invocation, settled=settled)
    rows = _rows(invocation)
    assert [r.kind for r in rows] == ["invocation.decided", "mcp.call", "invocation.finished"]
    left, finished = rows[1], rows[2]
    assert finished.id == left.id + 1 and finished.prev_hash == left.hash
    assert left.agent_id == invocation.agent_id and left.agent_name == invocation.agent.name
    assert left.actor_name == "mcp-bridge" and left.data == {"server": "probe"}


def test_a_call_without_rows_left_ends_as_before() -> None:
    # The control: nothing left, the call's end alone.
    invocation = _running_call()
    _finish(
        invocation=invocation,
        settled=Settled(status=InvocationStatus.SUCCEEDED, is_error=False, content="hi"),
    )
    assert [r.kind for r in _rows(invocation)] == ["invocation.decided", "invocation.finished"]


def test_the_rows_are_written_when_the_call_was_settled_elsewhere_while_it_ran() -> None:
    # The sweeper took its worker for dead and settled it: the result is discarded, but
    # what the tool did (it ran) is still recorded.
    invocation = _running_call()
    Invocation.objects.filter(id=invocation.id).update(status=InvocationStatus.FAILED)
    settled = Settled(
        status=InvocationStatus.SUCCEEDED, is_error=False, content="hi", audit=(_left(invocation),)
    )
    _finish(invocation=invocation, settled=settled)
    assert [r.kind for r in _rows(invocation)] == ["invocation.decided", "mcp.call"]
    assert Invocation.objects.get(id=invocation.id).status == InvocationStatus.FAILED
