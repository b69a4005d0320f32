"""approval_decide, expiry, escalation, cancel and grants against the real database."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from approvals_app.models import ApprovalGrant, ApprovalRequest
from approvals_app.services import (
    GrantSpec,
    approval_cancel,
    approval_decide,
    approval_grant_revoke,
    approvals_escalate_due,
    approvals_expire_due,
)
from audit_app.models import AuditEvent
from audit_app.record import Actor
from common.errors import ConflictError, ForbiddenError, InvalidArgumentError
from tools_app.models import Invocation

pytestmark = pytest.mark.django_db


def pending(invocation: Invocation) -> ApprovalRequest:
    invocation.refresh_from_db()
    assert invocation.status == "pending_approval", invocation.decision
    return ApprovalRequest.objects.get(invocation=invocation)


def kinds() -> list[str]:
    return list(AuditEvent.objects.order_by("id").values_list("kind", flat=True))


def test_locked_agent_asks_and_one_approval_queues_the_call(
    make_agent_row: Callable[..., Any], make_person: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    invocation = submit(make_agent_row(autonomy="locked"))
    request = pending(invocation)
    assert (request.required_approvals, request.risk_tier, request.rule) == (
        1,
        "low",
        "autonomy:locked",
    )
    operator = make_person("operator")
    decided = approval_decide(request=request, person=operator, decision="approve")
    assert decided.settled and decided.request.status == "approved"
    invocation.refresh_from_db()
    assert invocation.status == "queued"
    assert decided.request.decided_by == operator.username
    assert kinds()[-1] == "approval.approved"


def test_decisions_are_single_use(
    make_agent_row: Callable[..., Any], make_person: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    request = pending(submit(make_agent_row()))
    first, second = make_person("operator", "first-op"), make_person("admin")
    approval_decide(request=request, person=first, decision="approve")
    with pytest.raises(ConflictError, match="already approved by first-op") as caught:
        approval_decide(request=request, person=second, decision="deny", reason="no")
    assert caught.value.details == {"status": "approved", "decided_by": "first-op"}


def test_a_decision_is_bound_to_the_arguments_hash(
    make_agent_row: Callable[..., Any], make_person: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    request = pending(submit(make_agent_row()))
    with pytest.raises(ConflictError, match="other arguments"):
        approval_decide(request=request, person=make_person(), decision="approve",
                        arguments_hash="0" * 64)  # fmt: skip
    request.refresh_from_db()
    assert request.status == "pending" and request.approvals == 0
    approval_decide(request=request, person=make_person(), decision="approve",
                    arguments_hash=request.arguments_hash)  # fmt: skip


def test_two_approvals_need_two_distinct_people(
    make_agent_row: Callable[..., Any], make_person: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    invocation = submit(make_agent_row(autonomy="full"), "test_privileged", {})
    request = pending(invocation)
    # Two people, by the policy; the risk label is the effect's (a privileged tool: high).
    assert (request.required_approvals, request.risk_tier) == (2, "high")
    olga, ada = make_person("operator"), make_person("admin")
    first = approval_decide(request=request, person=olga, decision="approve")
    assert not first.settled and first.request.approvals == 1
    with pytest.raises(ConflictError, match="needs another person"):
        approval_decide(request=request, person=olga, decision="approve")
    invocation.refresh_from_db()
    assert invocation.status == "pending_approval"
    second = approval_decide(request=request, person=ada, decision="approve")
    assert second.settled and second.request.approvals == 2
    invocation.refresh_from_db()
    assert invocation.status == "queued"
    assert (
        kinds()[-2:] == ["approval.approval_recorded", "approval.approved"]
        or kinds()[-1] == "approval.approved"
    )


def test_deny_needs_a_reason_that_reaches_the_agent(
    make_agent_row: Callable[..., Any], make_person: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    invocation = submit(make_agent_row())
    request = pending(invocation)
    operator = make_person("operator", "dana")
    with pytest.raises(InvalidArgumentError, match="needs a reason"):
        approval_decide(request=request, person=operator, decision="deny", reason="  ")
    approval_decide(request=request, person=operator, decision="deny", reason="use staging")
    invocation.refresh_from_db()
    assert (invocation.status, invocation.error_code) == ("denied", "denied")
    assert invocation.error_message == "denied by dana: use staging"
    event = AuditEvent.objects.get(kind="approval.denied")
    assert (event.actor_name, event.reason, event.status) == ("dana", "use staging", "denied")


@pytest.mark.parametrize("role", ["auditor", None])
def test_only_operators_and_admins_decide(
    role: str | None,
    make_agent_row: Callable[..., Any],
    make_person: Callable[..., Any],
    submit: Callable[..., Any],
) -> None:
    request = pending(submit(make_agent_row()))
    person: Any = make_person(role) if role else None
    with pytest.raises(ForbiddenError):
        approval_decide(request=request, person=person, decision="approve")
    request.refresh_from_db()
    assert request.status == "pending"


def test_the_owner_is_barred_unless_a_rule_allows_it(
    make_agent_row: Callable[..., Any],
    make_person: Callable[..., Any],
    submit: Callable[..., Any],
    approval_config: Callable[[str], None],
) -> None:
    owner = make_person("operator")
    agent = make_agent_row(owner=owner)
    request = pending(submit(agent))
    with pytest.raises(ForbiddenError, match="you own agent"):
        approval_decide(request=request, person=owner, decision="approve")
    approval_config(
        "approval:\n  rules:\n    - {match: {tool: test_echo}, disposition: require_approval,"
        " owner_may_approve: true}\n"
    )
    allowed = pending(submit(agent))
    assert approval_decide(request=allowed, person=owner, decision="approve").settled


def test_expiry_never_runs_the_call_and_later_decisions_are_409(
    make_agent_row: Callable[..., Any], make_person: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    invocation = submit(make_agent_row())
    request = pending(invocation)
    ApprovalRequest.objects.filter(id=request.id).update(expires_at=timezone.now())
    with pytest.raises(ConflictError, match="already expired"):
        approval_decide(request=request, person=make_person(), decision="approve")
    invocation.refresh_from_db()
    assert (invocation.status, invocation.error_code) == ("expired", "approval_expired")
    assert "did not run" in invocation.error_message
    assert kinds()[-1] == "approval.expired"


def test_the_sweep_approves_on_expiry_only_where_allowed_and_never_high_or_critical(
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
    approval_config: Callable[[str], None],
) -> None:
    approval_config(
        "approval:\n  expiry:\n    low: {on_expiry: approve}\n    medium: {ttl_seconds: 30}\n"
    )
    agent = make_agent_row()
    low = submit(agent)
    critical = submit(make_agent_row(autonomy="full"), "test_privileged", {})
    requests = [pending(low), pending(critical)]
    assert [r.risk_tier for r in requests] == ["low", "high"]
    # Someone set the critical request to approve on expiry behind the config's back.
    ApprovalRequest.objects.filter(id=requests[1].id).update(on_expiry="approve")
    ApprovalRequest.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert approvals_expire_due() == 2
    low.refresh_from_db()
    critical.refresh_from_db()
    assert (low.status, critical.status) == ("queued", "expired")
    assert approvals_expire_due() == 0
    medium = pending(submit(agent, "test_counter", {}))
    assert medium.risk_tier == "medium"
    assert 29 <= (medium.expires_at - medium.created_at).total_seconds() <= 31


def test_escalation_flags_once(
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
    approval_config: Callable[[str], None],
) -> None:
    approval_config("approval:\n  escalate_after_seconds: 60\n")
    request = pending(submit(make_agent_row()))
    assert approvals_escalate_due() == 0
    later = timezone.now() + timedelta(seconds=61)
    assert approvals_escalate_due(now=later) == 1
    assert approvals_escalate_due(now=later) == 0
    request.refresh_from_db()
    assert request.escalated_at is not None and request.status == "pending"
    assert kinds().count("approval.escalated") == 1


def test_cancel_withdraws_the_call(
    make_agent_row: Callable[..., Any], make_person: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    invocation = submit(make_agent_row())
    request = pending(invocation)
    admin, operator = make_person("admin"), make_person()
    approval_cancel(request=request, actor=Actor.person(admin), reason="dup")
    invocation.refresh_from_db()
    assert invocation.status == "cancelled"
    assert kinds()[-1] == "approval.cancelled"
    with pytest.raises(ConflictError):
        approval_decide(request=request, person=operator, decision="approve")


def test_approve_and_remember_covers_the_same_call_then_is_revoked(
    make_agent_row: Callable[..., Any], make_person: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    agent = make_agent_row()
    operator = make_person("operator")
    request = pending(submit(agent, "test_echo", {"text": "deploy notes"}))
    approval_decide(request=request, person=operator, decision="approve",
                    remember=GrantSpec(minutes=10))  # fmt: skip
    grant = ApprovalGrant.objects.get()
    again = submit(agent, "test_echo", {"text": "deploy notes"})
    assert again.status == "queued"
    assert again.decision["rule"] == f"grant:{grant.id}"
    other = submit(agent, "test_echo", {"text": "something else"})
    assert other.status == "pending_approval"
    grant.refresh_from_db()
    assert grant.uses == 1
    approval_grant_revoke(grant=grant, person=make_person("admin"))
    with pytest.raises(ConflictError):
        approval_grant_revoke(grant=grant, person=operator)
    assert submit(agent, "test_echo", {"text": "deploy notes"}).status == "pending_approval"
    assert {"approval.grant_created", "approval.grant_revoked"} <= set(kinds())


def test_a_pattern_grant_and_its_limits(
    make_agent_row: Callable[..., Any], make_person: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    agent = make_agent_row()
    operator = make_person("operator")
    request = pending(submit(agent, "test_echo", {"text": "report-1"}))
    with pytest.raises(InvalidArgumentError, match="matches everything"):
        approval_decide(request=request, person=operator, decision="approve",
                        remember=GrantSpec(minutes=5, pattern={"text": "*"}))  # fmt: skip
    with pytest.raises(InvalidArgumentError, match="minutes"):
        approval_decide(request=request, person=operator, decision="approve",
                        remember=GrantSpec(minutes=100_000))  # fmt: skip
    approval_decide(request=request, person=operator, decision="approve",
                    remember=GrantSpec(minutes=5, pattern={"text": "report-*"}))  # fmt: skip
    assert submit(agent, "test_echo", {"text": "report-2"}).status == "queued"
    assert submit(agent, "test_echo", {"text": "invoice-2"}).status == "pending_approval"
    two = pending(submit(make_agent_row(autonomy="full"), "test_privileged", {}))
    with pytest.raises(InvalidArgumentError, match="one person only"):
        approval_decide(request=two, person=operator, decision="approve",
                        remember=GrantSpec(minutes=5))  # fmt: skip


def test_budget_counts_in_the_database_then_asks(
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
    approval_config: Callable[[str], None],
) -> None:
    approval_config(
        "approval:\n  rules:\n    - name: echo-budget\n      match: {tool: test_echo}\n"
        "      disposition: budget\n      budget: {limit: 2, period: day}\n"
    )
    agent = make_agent_row(autonomy="full")
    statuses = [submit(agent).status for _ in range(3)]
    assert statuses == ["queued", "queued", "pending_approval"]
    assert submit(make_agent_row(autonomy="full")).status == "queued"  # each agent its own


def test_rate_limit_answers_with_retry_after_and_is_audited(
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
    approval_config: Callable[[str], None],
) -> None:
    from common.errors import RateLimitedError

    approval_config(
        "approval:\n  rate_limits:\n    - {per: agent_tool, max_calls: 2, window_seconds: 60}\n"
    )
    agent = make_agent_row(autonomy="full")
    submit(agent)
    submit(agent)
    with pytest.raises(RateLimitedError) as caught:
        submit(agent)
    assert 1 <= caught.value.retry_after <= 60
    assert submit(agent, "test_counter", {}).status == "queued"  # another tool, another window
    refused = AuditEvent.objects.get(outcome="rate_limited")
    assert "at most 2 calls per 60s" in refused.reason


def test_a_tools_max_calls_per_minute_limits_each_agent_with_that_tool(
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
    approval_config: Callable[[str], None],
) -> None:
    from common.errors import RateLimitedError

    approval_config("tools:\n  test_echo: {max_calls_per_minute: 2}\n")
    agent = make_agent_row(autonomy="full")
    assert [submit(agent).status for _ in range(2)] == ["queued", "queued"]
    with pytest.raises(RateLimitedError) as caught:
        submit(agent)
    assert 1 <= caught.value.retry_after <= 60
    assert "at most 2 calls per 60s" in caught.value.message
    assert "tools.test_echo.max_calls_per_minute" in caught.value.message
    assert submit(agent, "test_counter", {}).status == "queued"  # another tool is not limited
    assert submit(make_agent_row(autonomy="full")).status == "queued"  # nor another agent
    refused = AuditEvent.objects.get(outcome="rate_limited")
    assert refused.tool == "test_echo" and "max_calls_per_minute" in refused.reason
