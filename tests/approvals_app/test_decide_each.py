"""A decision on many requests, decided a few hundred per transaction: every rule of a
single decision holds for each request, across chunks, repeated ids and races."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from approvals_app.models import ApprovalDecision, ApprovalRequest, ApprovalStatus, Verdict
from approvals_app.services import approvals_decide_each
from approvals_app.services.decide_each import CHUNK
from audit_app.models import AuditEvent
from audit_app.verify import audit_chain_verify
from tests.support.pending import pending_like, submitted
from tools_app.models import Invocation, InvocationStatus, ToolDefinition

pytestmark = pytest.mark.django_db


def writes(agent: Any, folder: str, count: int) -> list[str]:
    first = submitted(agent, "write_file", {"path": f"{folder}/0.txt", "content": "x\n"})
    more = pending_like(
        first, count - 1, lambda n: {"path": f"{folder}/{n + 1}.txt", "content": f"{n}\n"}
    )
    return [str(first.id), *more]


def test_more_than_a_chunk_of_two_agents_each_approved_once_in_line_and_audited_in_order(
    make_person: Callable[..., Any], make_agent_row: Callable[..., Any]
) -> None:
    one, two = make_agent_row(), make_agent_row()
    ids = writes(one, "a", CHUNK + 40) + writes(two, "b", 60)
    outcomes = approvals_decide_each(
        requests=ids, person=make_person("operator"), decision="approve"
    )
    assert [o.request_id for o in outcomes] == ids
    assert all(o.ok and o.settled for o in outcomes), [o for o in outcomes if not o.ok][:3]
    assert {o.what.split(" by ")[0] for o in outcomes} == {"write_file"}
    approved = ApprovalRequest.objects.filter(id__in=ids, status=ApprovalStatus.APPROVED)
    assert approved.count() == len(ids)
    assert ApprovalDecision.objects.filter(request__id__in=ids).count() == len(ids)
    events = AuditEvent.objects.filter(kind="approval.approved", data__approval__in=ids)
    assert events.count() == len(ids)
    assert set(events.values_list("status", flat=True)) == {InvocationStatus.QUEUED}
    # Each agent's line advanced: its cap of calls left the line, the rest wait, held.
    for agent in (one, two):
        calls = Invocation.objects.filter(agent=agent)
        assert calls.filter(status=InvocationStatus.PENDING_APPROVAL).count() == 0
        started = calls.filter(status=InvocationStatus.QUEUED, held=False).count()
        assert 1 <= started <= 8, started
        assert calls.filter(held=True).count() == calls.count() - started
    report = audit_chain_verify()
    assert report.ok, report.problem


def test_an_id_named_twice_is_decided_once_and_the_second_is_told_why(
    make_person: Callable[..., Any], make_agent_row: Callable[..., Any]
) -> None:
    ids = writes(make_agent_row(), "q", 3)
    pair = writes(make_agent_row(), "pair", 1)[0]
    ApprovalRequest.objects.filter(id=pair).update(required_approvals=2)
    operator = make_person("operator")
    outcomes = approvals_decide_each(
        requests=[ids[0], pair, ids[0], pair, ids[1], "not-an-id"],
        person=operator,
        decision="approve",
    )
    assert [o.ok for o in outcomes] == [True, True, False, False, True, False]
    assert outcomes[1].settled is False  # one of two approvals
    assert f"already approved by {operator.username}" in outcomes[2].message
    assert outcomes[2].status == 409
    assert "you already approved this request" in outcomes[3].message
    assert outcomes[5].status == 404 and "no approval request not-an-id" in outcomes[5].message
    assert ApprovalDecision.objects.filter(request__id=ids[0]).count() == 1
    assert ApprovalDecision.objects.filter(request__id=pair).count() == 1
    assert ApprovalRequest.objects.get(id=pair).approvals == 1
    # The second person's approval closes it (control: the quorum was counted, not lost).
    second = approvals_decide_each(
        requests=[pair], person=make_person("operator"), decision="approve"
    )
    assert second[0].ok and second[0].settled
    assert ApprovalRequest.objects.get(id=pair).status == ApprovalStatus.APPROVED


def test_a_call_its_agent_withdrew_meanwhile_is_not_approved_and_the_rest_are(
    make_person: Callable[..., Any], make_agent_row: Callable[..., Any]
) -> None:
    ids = writes(make_agent_row(), "q", 4)
    # The agent's cancel landed between the request's read and its approval (a race).
    gone = ApprovalRequest.objects.get(id=ids[1]).invocation_id
    Invocation.objects.filter(id=gone).update(status=InvocationStatus.CANCELLED)
    outcomes = approvals_decide_each(
        requests=ids, person=make_person("operator"), decision="approve"
    )
    assert [o.ok for o in outcomes] == [True, False, True, True]
    assert outcomes[1].message == "the agent withdrew this call"
    assert ApprovalRequest.objects.get(id=ids[1]).status == ApprovalStatus.CANCELLED
    assert Invocation.objects.get(id=gone).status == InvocationStatus.CANCELLED
    assert not AuditEvent.objects.filter(kind="approval.approved", invocation_id=gone).exists()
    for request_id in (ids[0], ids[2], ids[3]):
        assert ApprovalRequest.objects.get(id=request_id).status == ApprovalStatus.APPROVED


def test_requests_the_policy_now_refuses_are_withdrawn_and_the_others_approved(
    make_person: Callable[..., Any], make_agent_row: Callable[..., Any]
) -> None:
    agent = make_agent_row()
    writing = writes(agent, "w", 3)
    echo = submitted(agent, "test_echo", {"text": "hello"})
    # Switched off just now, before its re-decision of pending requests has run (a race):
    # approving decides each again first.
    assert ToolDefinition.objects.filter(name="write_file").update(enabled=False) == 1
    try:
        outcomes = approvals_decide_each(
            requests=[*writing, str(echo.id)], person=make_person("operator"), decision="approve"
        )
    finally:
        ToolDefinition.objects.filter(name="write_file").update(enabled=True)
    assert [o.ok for o in outcomes] == [False, False, False, True]
    assert all("withdrawn" in o.message for o in outcomes[:3]), outcomes[0].message
    for request_id in writing:
        request = ApprovalRequest.objects.get(id=request_id)
        assert request.verdict == Verdict.WITHDRAWN and request.status == ApprovalStatus.DENIED
    assert ApprovalRequest.objects.get(id=echo.id).status == ApprovalStatus.APPROVED


def test_a_denial_of_many_tells_each_agent_the_reason(
    make_person: Callable[..., Any], make_agent_row: Callable[..., Any]
) -> None:
    ids = writes(make_agent_row(), "q", CHUNK + 5)
    operator = make_person("operator")
    outcomes = approvals_decide_each(
        requests=ids, person=operator, decision="deny", reason="not this quarter"
    )
    assert all(o.ok and o.settled for o in outcomes)
    calls = Invocation.objects.filter(approval__id__in=ids)
    assert set(calls.values_list("status", flat=True)) == {InvocationStatus.DENIED}
    assert set(calls.values_list("error_message", flat=True)) == {
        f"denied by {operator.username}: not this quarter"
    }
    events = AuditEvent.objects.filter(kind="approval.denied", data__approval__in=ids)
    assert events.count() == len(ids)
    assert set(events.values_list("reason", flat=True)) == {"not this quarter"}
    assert audit_chain_verify().ok
