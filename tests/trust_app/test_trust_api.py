"""The trust API and page: who may call them, validation, the error envelope."""
# ruff: noqa: F811  (pytest fixtures imported from the support module)

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import include, path

from audit_app.models import AuditEvent
from tests.trust_app.test_trust_support import (  # noqa: F401
    SEED_MILESTONE,
    TERMINAL_GATED,
    make_agent,
    make_person,
    settled_call,
    trust_config,
)
from trust_app.models import PromotionRequest, TaskOutcome

# The site, which includes the trust pages.
urlpatterns = [
    path("", include("synthorg_site.urls")),
]
pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]
TASK = {"task_id": "t1", "difficulty": "hard", "quality": 9, "completed": True}


def _client(person: Any) -> Client:
    client = Client()
    client.force_login(person)
    return client


def _post(client: Client, url: str, body: Any) -> Any:
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_task_outcomes_endpoint(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    trust_config(SEED_MILESTONE)
    agent, operator = make_agent(), make_person("operator")
    url = f"/api/v1/agents/{agent.id}/task-outcomes/"
    answer = _post(_client(operator), url, {**TASK, "categories": ["file_system"]})
    assert answer.status_code == 201, answer.content
    assert answer.json()["trust"]["levels"] == {"all": "sandboxed"}
    assert TaskOutcome.objects.get(agent=agent).reported_by_name == operator.get_username()
    assert AuditEvent.objects.filter(kind="trust.task_outcome").count() == 1
    again = _post(_client(operator), url, TASK)
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "conflict"
    bad = _post(_client(operator), url, {**TASK, "task_id": "t2", "quality": 11})
    assert bad.status_code == 400
    assert "quality" in bad.json()["error"]["message"]
    extra = _post(_client(operator), url, {**TASK, "task_id": "t3", "mood": "good"})
    assert extra.status_code == 400
    assert "mood" in extra.json()["error"]["message"]
    missing = _post(_client(operator), url, {"task_id": "t4"})
    assert missing.status_code == 400
    assert _post(_client(make_person("auditor")), url, TASK).status_code == 403
    assert _post(Client(), url, TASK).status_code in (401, 403)
    unknown = _post(
        _client(operator),
        "/api/v1/agents/00000000-0000-0000-0000-000000000000/task-outcomes/",
        TASK,
    )
    assert unknown.status_code == 404


def test_promotions_list_and_decide(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    trust_config(TERMINAL_GATED)
    agent, operator = make_agent(), make_person("operator")
    url = f"/api/v1/agents/{agent.id}/task-outcomes/"
    assert _post(_client(operator), url, {**TASK, "categories": ["terminal"]}).status_code == 201
    listed = _client(operator).get("/api/v1/promotions/?status=pending")
    assert listed.status_code == 200
    (entry,) = listed.json()["results"]
    assert (entry["kind"], entry["track"], entry["to_level"]) == (
        "promotion",
        "terminal",
        "standard",
    )
    assert _client(make_person("auditor")).get("/api/v1/promotions/").status_code == 403
    assert _client(operator).get("/api/v1/promotions/?status=maybe").status_code == 400
    decide = f"/api/v1/promotions/{entry['id']}/decide/"
    assert (
        _post(
            _client(make_person("auditor")), decide, {"decision": "approve", "reason": "x"}
        ).status_code
        == 403
    )
    done = _post(_client(operator), decide, {"decision": "approve", "reason": "earned it"})
    assert done.status_code == 200, done.content
    assert done.json()["status"] == "approved"
    assert done.json()["decided_by"] == operator.get_username()
    assert (
        _post(_client(operator), decide, {"decision": "deny", "reason": "late"}).status_code == 409
    )
    assert _client(operator).get("/api/v1/promotions/?status=pending").json()["results"] == []


def test_feedback_endpoint(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
    settled_call: Callable[..., Any],
) -> None:
    trust_config(SEED_MILESTONE)
    call = settled_call(make_agent())
    operator = make_person("operator")
    url = f"/api/v1/invocations/{call.id}/feedback/"
    answer = _post(_client(operator), url, {"rating": 5, "note": "clean diff"})
    assert answer.status_code == 201, answer.content
    assert answer.json()["rating"] == 5
    assert _post(_client(operator), url, {"rating": 4}).status_code == 409
    assert _post(_client(make_person()), url, {"rating": 9}).status_code == 400


def test_trust_page_and_reset(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    trust_config(TERMINAL_GATED)
    agent = make_agent()
    admin, operator = make_person("admin"), make_person("operator")
    _post(
        _client(operator),
        f"/api/v1/agents/{agent.id}/task-outcomes/",
        {**TASK, "categories": ["terminal"]},
    )
    page = _client(operator).get(f"/agents/{agent.id}/trust/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-category="terminal"' in html
    assert "Waiting for a person" in html
    assert "Reset trust" not in html
    assert "Reset trust" in _client(admin).get(f"/agents/{agent.id}/trust/").content.decode()
    assert _client(make_person("auditor")).get(f"/agents/{agent.id}/trust/").status_code == 403
    assert Client().get(f"/agents/{agent.id}/trust/").status_code == 302
    request = PromotionRequest.objects.get(agent=agent)
    decided = _client(operator).post(
        f"/promotions/{request.id}/decide/", {"decision": "approve", "reason": "looked at it"}
    )
    assert decided.status_code == 302
    request.refresh_from_db()
    assert request.status == "approved"
    _post(
        _client(operator),
        f"/api/v1/agents/{agent.id}/task-outcomes/",
        {**TASK, "task_id": "t2", "categories": ["terminal"]},
    )
    after = _client(operator).get(f"/agents/{agent.id}/trust/").content.decode()
    assert "looked at it" in after
    assert "<svg" in after  # the score moved: the chart has two points
    assert (
        _client(operator).post(f"/agents/{agent.id}/trust/reset/", {"reason": "x"}).status_code
        == 403
    )
    api_reset = _post(
        _client(admin), f"/api/v1/agents/{agent.id}/trust/reset/", {"reason": "new job"}
    )
    assert api_reset.status_code == 200
    assert api_reset.json()["levels"]["terminal"] == "restricted"
    summary = _client(operator).get(f"/api/v1/agents/{agent.id}/trust/").json()
    assert [h["kind"] for h in summary["history"]][:2] == ["reset", "promotion"]
