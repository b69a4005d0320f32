"""Trust services against the database: evidence, evaluation, promotion, decay, reset."""
# ruff: noqa: F811  (pytest fixtures imported from the support module)

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from audit_app.models import AuditEvent
from common.errors import ConflictError, ForbiddenError, InvalidArgumentError
from tests.trust_app.policy.factories import tool
from tests.trust_app.test_trust_support import (  # noqa: F401
    SEED_MILESTONE,
    TERMINAL_GATED,
    make_agent,
    make_person,
    settled_call,
    trust_config,
)
from trust_app.models import (
    PromotionRequest,
    PromotionStatus,
    TrustChange,
    TrustInvocationOutcome,
    TrustState,
)
from trust_app.policy import decide
from trust_app.selectors.agents import agent_policy
from trust_app.selectors.trust import agent_earned_levels, agent_trust_summary, pending_promotions
from trust_app.services.evidence import (
    invocation_feedback_record,
    task_outcome_report,
    trust_invocation_outcome_record,
)
from trust_app.services.promotion import promotion_decide
from trust_app.services.trust import trust_evaluate, trust_reset

pytestmark = pytest.mark.django_db
LS = {"command": "ls"}
TERMINAL = tool("shell_command", category="terminal")


def _report(agent: Any, person: Any, task_id: str = "t1", **fields: Any) -> Any:
    values = {"difficulty": "hard", "quality": 9.0, "completed": True, "categories": []}
    values.update(fields)
    return task_outcome_report(agent=agent, person=person, task_id=task_id, **values)


def test_disabled_trust_leaves_the_configured_level(make_agent: Callable[..., Any]) -> None:
    agent = make_agent("standard")
    assert agent_earned_levels(agent) == {}
    assert trust_evaluate(agent=agent) is None
    assert not decide(agent_policy(agent), TERMINAL, LS).denied


def test_approved_promotion_changes_the_next_decision(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    trust_config(TERMINAL_GATED)
    agent, operator = make_agent("standard"), make_person("operator")
    before = decide(agent_policy(agent), TERMINAL, LS)
    assert before.denied
    assert "earned level restricted" in before.reason
    _report(agent, operator, categories=["terminal"])
    (request,) = pending_promotions()
    assert (request.track, request.from_level, request.to_level) == (
        "terminal",
        "restricted",
        "standard",
    )
    assert decide(agent_policy(agent), TERMINAL, LS).denied  # waiting is not granting
    promotion_decide(request=request, person=operator, decision="approve", reason="reviewed")
    assert not decide(agent_policy(agent), TERMINAL, LS).denied
    change = TrustChange.objects.get(agent=agent, kind="promotion")
    assert (change.decided_by_name, change.reason, change.automatic) == (
        operator.get_username(),
        "reviewed",
        False,
    )
    assert AuditEvent.objects.filter(
        kind="trust.promoted", actor_name=operator.get_username()
    ).exists()
    with pytest.raises(ConflictError):
        promotion_decide(request=request, person=operator, decision="deny", reason="again")


def test_denied_promotion_changes_nothing_and_is_not_asked_again_at_once(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    trust_config(TERMINAL_GATED)
    agent, operator = make_agent("standard"), make_person("operator")
    _report(agent, operator, categories=["terminal"])
    request = PromotionRequest.objects.get(agent=agent)
    promotion_decide(request=request, person=operator, decision="deny", reason="not yet")
    _report(agent, operator, "t2", categories=["terminal"])
    assert PromotionRequest.objects.filter(agent=agent).count() == 1
    assert decide(agent_policy(agent), TERMINAL, LS).denied
    assert AuditEvent.objects.filter(kind="trust.promotion_denied").exists()


def test_who_may_decide(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    trust_config(TERMINAL_GATED)
    owner = make_person("operator")
    agent = make_agent("standard", owner=owner)
    _report(agent, make_person("admin"), categories=["terminal"])
    request = PromotionRequest.objects.get(agent=agent)
    with pytest.raises(ForbiddenError):
        promotion_decide(
            request=request, person=make_person("auditor"), decision="approve", reason="x"
        )
    with pytest.raises(ForbiddenError):
        promotion_decide(request=request, person=owner, decision="approve", reason="mine")
    with pytest.raises(InvalidArgumentError):
        promotion_decide(request=request, person=make_person(), decision="maybe", reason="x")
    with pytest.raises(InvalidArgumentError):
        promotion_decide(request=request, person=make_person(), decision="approve", reason=" ")
    request.refresh_from_db()
    assert request.status == PromotionStatus.PENDING


def test_milestone_promotes_automatically_and_is_audited(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    trust_config(SEED_MILESTONE)
    agent, operator = make_agent("standard"), make_person("operator")
    assert agent_earned_levels(agent)["file_system"] == "sandboxed"
    for i in range(5):
        _report(agent, operator, f"task-{i}", quality=8.0)
    assert agent_earned_levels(agent)["terminal"] == "restricted"
    change = TrustChange.objects.get(agent=agent)
    assert change.automatic and change.to_level == "restricted"
    event = AuditEvent.objects.get(kind="trust.promoted", agent_id=agent.id)
    assert "milestone sandboxed_to_restricted reached" in event.reason
    assert AuditEvent.objects.filter(kind="trust.task_outcome", agent_id=agent.id).count() == 5


def test_idle_decay_demotes_at_once_and_is_audited(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    trust_config(SEED_MILESTONE)
    agent, operator = make_agent("elevated"), make_person("operator")
    for i in range(5):
        _report(agent, operator, f"task-{i}")
    assert agent_earned_levels(agent)["web"] == "restricted"
    later = timezone.now() + timedelta(days=29)
    assert not trust_evaluate(agent=agent, now=later).changes  # type: ignore[union-attr]
    much_later = timezone.now() + timedelta(days=31)
    evaluation = trust_evaluate(agent=agent, now=much_later)
    assert evaluation is not None
    assert [c.to_level for c in evaluation.changes] == ["sandboxed"]
    assert agent_earned_levels(agent)["web"] == "sandboxed"
    demotion = TrustChange.objects.get(agent=agent, kind="demotion")
    assert demotion.automatic and "idle" in demotion.reason
    assert AuditEvent.objects.filter(kind="trust.demoted", agent_id=agent.id).exists()


def test_invocation_outcomes_are_evidence_once(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    settled_call: Callable[..., Any],
) -> None:
    trust_config(SEED_MILESTONE)
    agent = make_agent()
    ok = settled_call(agent, "succeeded")
    first = trust_invocation_outcome_record(invocation=ok)
    again = trust_invocation_outcome_record(invocation=ok)
    assert first is not None and again is not None and first.pk == again.pk
    assert first.result == "success"
    for status, result in [("failed", "failure"), ("timed_out", "error"), ("denied", "denial")]:
        row = trust_invocation_outcome_record(invocation=settled_call(agent, status))
        assert row is not None and row.result == result
    assert trust_invocation_outcome_record(invocation=settled_call(agent, "cancelled")) is None
    assert trust_invocation_outcome_record(invocation=settled_call(agent, "running")) is None
    assert TrustInvocationOutcome.objects.filter(agent=agent).count() == 4
    summary = agent_trust_summary(agent)
    assert summary["evidence"]["calls"] == 4
    assert summary["evidence"]["denied"] == 1


def test_tasks_count_on_the_categories_of_their_calls(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
    settled_call: Callable[..., Any],
) -> None:
    trust_config(TERMINAL_GATED)
    agent, operator = make_agent("standard"), make_person("operator")
    trust_invocation_outcome_record(invocation=settled_call(agent, task_id="job-7"))
    _report(agent, operator, "job-7")
    assert PromotionRequest.objects.get(agent=agent).track == "terminal"


def test_feedback_is_recorded_once_and_audited(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
    settled_call: Callable[..., Any],
) -> None:
    trust_config(SEED_MILESTONE)
    agent, operator = make_agent(), make_person("operator")
    call = settled_call(agent)
    invocation_feedback_record(invocation=call, person=operator, rating=4, note="tidy")
    with pytest.raises(ConflictError):
        invocation_feedback_record(invocation=call, person=operator, rating=5)
    for bad in (0, 6, True, "5", 4.5):
        with pytest.raises(InvalidArgumentError):
            invocation_feedback_record(invocation=call, person=make_person(), rating=bad)
    with pytest.raises(ForbiddenError):
        invocation_feedback_record(invocation=call, person=make_person("auditor"), rating=3)
    assert AuditEvent.objects.filter(kind="trust.feedback", outcome="4").count() == 1
    assert agent_trust_summary(agent)["evidence"]["ratings"] == 1


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"quality": 10.5}, "quality"),
        ({"quality": -1}, "quality"),
        ({"quality": True}, "quality"),
        ({"difficulty": "impossible"}, "difficulty"),
        ({"completed": "yes"}, "completed"),
        ({"categories": ["files"]}, "categories"),
    ],
)
def test_task_outcomes_are_validated(
    fields: dict[str, Any],
    message: str,
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        _report(make_agent(), make_person(), **fields)


def test_a_task_is_reported_once(
    make_agent: Callable[..., Any], make_person: Callable[..., Any]
) -> None:
    agent, person = make_agent(), make_person()
    _report(agent, person)
    with pytest.raises(ConflictError):
        _report(agent, person)


def test_admin_reset_starts_over(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    trust_config(SEED_MILESTONE)
    agent, admin = make_agent(), make_person("admin")
    for i in range(5):
        _report(agent, admin, f"task-{i}")
    assert agent_earned_levels(agent)["file_system"] == "restricted"
    with pytest.raises(ForbiddenError):
        trust_reset(agent=agent, person=make_person("operator"), reason="no")
    trust_reset(agent=agent, person=admin, reason="new role")
    assert agent_earned_levels(agent)["file_system"] == "sandboxed"
    # Evidence from before the reset no longer counts.
    trust_evaluate(agent=agent)
    assert TrustState.objects.get(agent=agent).levels == {"all": "sandboxed"}
    reset = TrustChange.objects.get(agent=agent, kind="reset")
    assert (reset.decided_by_name, reset.reason) == (admin.get_username(), "new role")
    assert AuditEvent.objects.filter(kind="trust.reset", agent_id=agent.id).exists()


def test_custom_level_is_not_governed_by_trust(
    trust_config: Callable[[str], None], make_agent: Callable[..., Any]
) -> None:
    trust_config(SEED_MILESTONE)
    agent = make_agent("custom")
    assert agent_earned_levels(agent) == {}
    assert trust_evaluate(agent=agent) is None
