"""invocation_claim: one winner, and the claimed call loaded as the ORM would load it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from django.db.models import Model

import tools_app.services.invocation_dispatch as dispatch
from approvals_app.models import ApprovalRequest
from audit_app.record import Actor
from common.testing import run_at_once
from tools_app.models import Invocation, InvocationStatus
from tools_app.services.invocation_claim import disabled_at_claim, invocation_claim
from tools_app.services.invocation_execute import invocation_execute
from tools_app.services.invocation_submit import CallRequest, invocation_submit
from tools_app.services.tool_registry import tool_enabled_set, tool_registry_sync
from trust_app.models import Agent, AgentPermissions
from trust_app.services.agents import agent_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _no_queue() -> Iterator[None]:
    with mock.patch.object(dispatch, "enqueue_invocation", lambda invocation: None):
        yield


def fields_of(instance: Model | None) -> dict[str, Any] | None:
    if instance is None:
        return None
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def queued_call(tool: str = "test_echo", *, permissions: bool = False) -> Invocation:
    agent = agent_create(name=f"claim-{uuid.uuid4().hex[:10]}", access_level="standard").agent
    if permissions:
        AgentPermissions.objects.create(
            agent=agent,
            allowed=["test_echo", "test_privileged"],
            sub_constraints={"file_system": "project_directory"},
        )
        agent = Agent.objects.get(pk=agent.pk)
    call = CallRequest(tool=tool, arguments={"text": "hi"})
    invocation = invocation_submit(agent=agent, call=call).invocation
    if invocation.status == InvocationStatus.PENDING_APPROVAL:  # approved, as by people
        Invocation.objects.filter(pk=invocation.pk).update(status=InvocationStatus.QUEUED)
    return Invocation.objects.get(pk=invocation.pk)


def orm_view(invocation_id: uuid.UUID) -> tuple[Any, ...]:
    loaded = Invocation.objects.select_related("agent__permissions", "approval").get(
        id=invocation_id
    )
    permissions = getattr(loaded.agent, "permissions", None)
    approval = getattr(loaded, "approval", None)
    return fields_of(loaded), fields_of(loaded.agent), fields_of(permissions), fields_of(approval)


@pytest.mark.parametrize(
    ("tool", "permissions"),
    [("test_echo", False), ("test_echo", True), ("test_privileged", True)],
    ids=["plain", "with_permissions", "with_approval"],
)
def test_the_claimed_call_is_what_the_orm_loads(tool: str, permissions: bool) -> None:
    queued = queued_call(tool, permissions=permissions)
    claimed = invocation_claim(invocation_id=queued.id, worker="worker-1")
    assert claimed is not None
    assert claimed.status == "running" and claimed.worker == "worker-1"
    assert claimed.attempts == queued.attempts + 1 and claimed.started_at is not None
    permissions_seen = getattr(claimed.agent, "permissions", None)
    approval_seen = getattr(claimed, "approval", None)
    assert (permissions_seen is not None) is permissions
    assert (approval_seen is not None) is (tool == "test_privileged")
    with_queries = orm_view(queued.id)
    seen = (
        fields_of(claimed),
        fields_of(claimed.agent),
        fields_of(permissions_seen),
        fields_of(approval_seen),
    )
    assert seen == with_queries


def test_a_call_that_is_not_queued_is_not_claimed() -> None:
    queued = queued_call()
    assert invocation_claim(invocation_id=queued.id, worker="first") is not None
    assert invocation_claim(invocation_id=queued.id, worker="second") is None
    assert Invocation.objects.get(pk=queued.pk).worker == "first"
    cancelled = queued_call()
    Invocation.objects.filter(pk=cancelled.pk).update(status=InvocationStatus.CANCELLED)
    assert invocation_claim(invocation_id=cancelled.id, worker="w") is None
    assert Invocation.objects.get(pk=cancelled.pk).attempts == 0
    assert invocation_claim(invocation_id=uuid.uuid4(), worker="w") is None


def test_workers_racing_for_one_call_have_one_winner() -> None:
    queued = queued_call()
    won: list[str] = []

    def claim(n: int) -> None:
        if invocation_claim(invocation_id=queued.id, worker=f"w{n}") is not None:
            won.append(f"w{n}")

    run_at_once(8, claim)
    assert len(won) == 1
    stored = Invocation.objects.get(pk=queued.pk)
    assert stored.worker == won[0] and stored.attempts == 1


def test_an_approval_loaded_with_the_claim_points_back_at_the_call() -> None:
    queued = queued_call("test_privileged")
    claimed = invocation_claim(invocation_id=queued.id, worker="w")
    assert claimed is not None
    approval: ApprovalRequest = claimed.approval
    assert approval.invocation is claimed


def test_a_tool_switched_off_after_its_call_was_queued_is_known_to_the_claim() -> None:
    """The claim reads the tools switched off in its own statement: a call queued
    before its tool was switched off is claimed knowing it, and is not run."""
    tool_registry_sync()
    queued = queued_call()
    tool_enabled_set(name="test_echo", enabled=False, actor=Actor.system(), reason="leaks")
    claimed = invocation_claim(invocation_id=queued.id, worker="w")
    assert claimed is not None
    assert "test_echo" in disabled_at_claim(claimed)
    Invocation.objects.filter(pk=queued.pk).update(status=InvocationStatus.QUEUED)
    invocation_execute(invocation_id=queued.id, worker="w")
    ran = Invocation.objects.get(pk=queued.pk)
    assert ran.status == InvocationStatus.FAILED and ran.error_code == "tool_disabled"


def test_control_a_tool_left_on_is_claimed_and_run() -> None:
    tool_registry_sync()
    queued = queued_call()
    claimed = invocation_claim(invocation_id=queued.id, worker="w")
    assert claimed is not None
    assert "test_echo" not in disabled_at_claim(claimed)
    Invocation.objects.filter(pk=queued.pk).update(status=InvocationStatus.QUEUED)
    invocation_execute(invocation_id=queued.id, worker="w")
    assert Invocation.objects.get(pk=queued.pk).status == InvocationStatus.SUCCEEDED
