"""Operators see their own decisions and how each call ended, and nobody else's."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from approvals_app.models import ApprovalRequest
from approvals_app.services import approval_decide
from common.testing import RunningProcess
from tests.common.permission_suite import PermissionSuite, signed_in
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from trust_app.services.agents import person_create

make_agent = api_fixtures.make_agent


class TestMyDecisionsAccess(PermissionSuite):
    path = "/decisions/"
    allowed = frozenset({"operator", "admin"})


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_an_operator_sees_the_outcome_of_each_call_they_decided_and_no_one_elses(
    make_agent: Callable[..., AgentClient], celery_worker_process: RunningProcess
) -> None:
    client = make_agent(autonomy="locked")
    oscar = person_create(username="oscar-decides", role="operator", password=None)
    olga = person_create(username="olga-decides", role="operator", password=None)
    approved = client.call("test_echo", {"text": "echo from the approved call"}, wait=0).json()
    denied = client.call("test_echo", {"text": "never run"}, wait=0).json()
    others = client.call("test_echo", {"text": "olga's call"}, wait=0).json()
    for created in (approved, denied, others):
        assert created["status"] == "pending_approval", created

    def request_of(created: dict[str, str]) -> ApprovalRequest:
        return ApprovalRequest.objects.get(invocation_id=created["id"])

    approval_decide(request=request_of(approved), person=oscar, decision="approve")
    approval_decide(request=request_of(denied), person=oscar, decision="deny", reason="not today")
    approval_decide(request=request_of(others), person=olga, decision="approve")
    for created in (approved, others):
        assert client.get(created["id"], wait=60).json()["status"] == "succeeded"

    html = signed_in("oscar-decides").get("/decisions/").content.decode()
    assert html.count("data-decision=") == 2
    assert "echo from the approved call" in html and "succeeded" in html
    assert "not today" in html and "denied" in html
    # Olga's decision and her call's output are hers alone.
    assert "olga&#x27;s call" not in html and "olga's call" not in html
    olga_html = signed_in("olga-decides").get("/decisions/").content.decode()
    assert olga_html.count("data-decision=") == 1 and "olga&#x27;s call" in olga_html
