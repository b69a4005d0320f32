"""POST /api/v1/agents/<id>/explain/: the decision and trace, nothing run or recorded."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from audit_app.models import AuditEvent
from tools_app.models import Invocation
from trust_app.models import AgentPermissions
from trust_app.services.agents import agent_create, person_create, person_token_issue

pytestmark = pytest.mark.django_db


def _bearer(role: str) -> dict[str, str]:
    person = person_create(username=f"p-{role}", role=role, password=None)
    return {"Authorization": f"Bearer {person_token_issue(person=person)}"}


def _explain(headers: dict[str, str], agent_id: object, body: dict[str, object]) -> Any:
    return Client().post(
        f"/api/v1/agents/{agent_id}/explain/",
        body,
        content_type="application/json",
        headers=headers,
    )


def test_admin_gets_the_decision_and_trace_and_nothing_runs() -> None:
    agent = agent_create(name="explained", access_level="sandboxed").agent
    headers = _bearer("admin")
    events = AuditEvent.objects.count()
    response = _explain(
        headers,
        agent.id,
        {"tool": "http_request", "arguments": {"url": "https://example.org/"}},
    )
    assert response.status_code == 200, response.content
    decision = response.json()["decision"]
    assert decision["outcome"] == "deny"
    assert decision["trace"] and decision["reason"]
    assert not Invocation.objects.exists()
    assert AuditEvent.objects.count() == events


def test_explain_follows_the_agents_permissions() -> None:
    agent = agent_create(name="listed", access_level="standard").agent
    AgentPermissions.objects.create(agent=agent, denied=["read_file"])
    body = _explain(
        _bearer("admin"), agent.id, {"tool": "read_file", "arguments": {"path": "x"}}
    ).json()
    assert body["decision"]["outcome"] == "deny"
    assert body["decision"]["rule"]


@pytest.mark.parametrize("role", ["operator", "auditor"])
def test_only_admins_may_explain(role: str) -> None:
    agent = agent_create(name=f"e-{role}", access_level="standard").agent
    response = _explain(_bearer(role), agent.id, {"tool": "read_file", "arguments": {}})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"


def test_agents_and_strangers_are_refused() -> None:
    created = agent_create(name="self-explainer", access_level="standard")
    as_agent = _explain(
        {"Authorization": f"Bearer {created.token}"}, created.agent.id, {"tool": "read_file"}
    )
    assert as_agent.status_code == 403
    assert _explain({}, created.agent.id, {"tool": "read_file"}).status_code == 401


def test_unknown_agent_and_unknown_tool() -> None:
    headers = _bearer("admin")
    missing = _explain(headers, "00000000-0000-0000-0000-000000000000", {"tool": "read_file"})
    assert missing.status_code == 404
    agent = agent_create(name="e-unknown", access_level="standard").agent
    unknown = _explain(headers, agent.id, {"tool": "no_such_tool"})
    assert unknown.status_code == 400
    assert "no_such_tool" in unknown.json()["error"]["message"]
