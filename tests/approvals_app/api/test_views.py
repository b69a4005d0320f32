"""GET /api/v1/approvals/ and POST /api/v1/approvals/<id>/decide/ as API.md gives them."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from django.test import Client
from django.utils import timezone

from approvals_app.models import ApprovalRequest
from tests.approvals_app.conftest import PASSWORD
from tools_app.models import Invocation
from trust_app.services.agents import person_token_issue

pytestmark = pytest.mark.django_db


def signed_in(person: Any) -> Client:
    client = Client(enforce_csrf_checks=True)
    assert client.login(username=person.username, password=PASSWORD)
    return client


def bearer(person: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {person_token_issue(person=person)}"}


def decide(
    client: Client, request_id: Any, body: dict[str, Any], headers: dict[str, str] | None = None
) -> Any:
    return client.post(
        f"/api/v1/approvals/{request_id}/decide/", json.dumps(body),
        content_type="application/json", headers=headers or {},
    )  # fmt: skip


@pytest.fixture
def request_row(make_agent_row: Callable[..., Any], submit: Callable[..., Any]) -> ApprovalRequest:
    return ApprovalRequest.objects.get(invocation=submit(make_agent_row(autonomy="locked")))


def test_pending_list_for_operators_with_what_is_asked(
    request_row: ApprovalRequest, make_person: Callable[..., Any]
) -> None:
    client = Client()
    answer = client.get(
        "/api/v1/approvals/?status=pending", headers=bearer(make_person("operator"))
    )
    assert answer.status_code == 200
    assert set(answer.json()) == {"results", "next"}
    assert answer.json()["next"] is None
    [item] = answer.json()["results"]
    assert item["id"] == str(request_row.id) and item["status"] == "pending"
    assert item["invocation"]["tool"] == "test_echo"
    assert item["invocation"]["arguments"] == {"text": "hi"}
    assert item["agent"]["autonomy"] == "locked"
    assert item["rule"] == "autonomy:locked" and item["trace"]
    assert (item["required_approvals"], item["approvals"], item["risk_tier"]) == (1, 0, "low")
    assert (
        client.get(
            "/api/v1/approvals/?status=approved", headers=bearer(make_person("admin"))
        ).json()["results"]
        == []
    )
    bad = client.get("/api/v1/approvals/?status=nope", headers=bearer(make_person("admin")))
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_argument"


@pytest.mark.parametrize("role", ["auditor", "anonymous", "agent"])
def test_auditors_agents_and_strangers_are_refused(
    role: str,
    request_row: ApprovalRequest,
    make_person: Callable[..., Any],
    make_agent_row: Callable[..., Any],
) -> None:
    headers: dict[str, str] = {}
    if role == "auditor":
        headers = bearer(make_person("auditor"))
    elif role == "agent":
        from trust_app.services.agents import agent_create

        created = agent_create(name="forger", access_level="elevated")
        headers = {"Authorization": f"Bearer {created.token}"}
    status = 401 if role == "anonymous" else 403
    client = Client()
    assert client.get("/api/v1/approvals/", headers=headers).status_code == status
    answer = decide(client, request_row.id, {"decision": "approve"}, headers)
    assert answer.status_code == status
    assert answer.json()["error"]["code"] == ("unauthenticated" if status == 401 else "forbidden")
    request_row.refresh_from_db()
    assert request_row.status == "pending"


def test_a_session_decides_with_csrf_and_a_second_decision_is_409(
    request_row: ApprovalRequest, make_person: Callable[..., Any]
) -> None:
    winner = make_person("operator", "winner")
    client = signed_in(winner)
    assert decide(client, request_row.id, {"decision": "approve"}).status_code == 403  # no CSRF
    client.get("/")  # any page sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    answer = decide(client, request_row.id, {"decision": "approve"}, {"X-CSRFToken": token})
    assert answer.status_code == 200, answer.content
    assert (answer.json()["status"], answer.json()["decided_by"]) == ("approved", "winner")
    assert answer.json()["invocation"]["status"] == "queued"
    late = decide(Client(), request_row.id, {"decision": "deny", "reason": "x"},
                  headers=bearer(make_person("admin")))  # fmt: skip
    assert late.status_code == 409
    assert late.json()["error"]["details"]["decided_by"] == "winner"
    assert "already approved by winner" in late.json()["error"]["message"]


def test_expired_is_409_and_deny_without_reason_is_400(
    request_row: ApprovalRequest, make_person: Callable[..., Any]
) -> None:
    headers = bearer(make_person("operator"))
    no_reason = decide(Client(), request_row.id, {"decision": "deny"}, headers)
    assert no_reason.status_code == 400
    ApprovalRequest.objects.filter(id=request_row.id).update(expires_at=timezone.now())
    answer = decide(Client(), request_row.id, {"decision": "approve"}, headers)
    assert answer.status_code == 409 and answer.json()["error"]["details"]["status"] == "expired"
    assert Invocation.objects.get(id=request_row.invocation_id).status == "expired"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"decision": "deny", "reason": 12}, "reason"),
        ({"decision": "approve", "arguments_hash": int("1" * 64)}, "arguments_hash"),
        ({"decision": "approve", "remember": {"minutes": "10"}}, "remember.minutes"),
        ({"decision": "approve", "remember": {"minutes": True}}, "remember.minutes"),
        (
            {"decision": "approve", "remember": {"minutes": 10, "pattern": {"path": 7}}},
            "remember.pattern.path",
        ),
    ],
)
def test_a_decision_whose_value_has_another_json_type_is_400_and_decides_nothing(
    request_row: ApprovalRequest, make_person: Callable[..., Any], body: dict[str, Any], field: str
) -> None:
    headers = bearer(make_person("operator"))
    refused = decide(Client(), request_row.id, body, headers)
    assert refused.status_code == 400, refused.content
    assert list(refused.json()["error"]["details"]["fields"]) == [field], refused.json()
    assert ApprovalRequest.objects.get(id=request_row.id).status == "pending"
    # Control: the same decision with values of the right type is taken.
    taken = decide(Client(), request_row.id, {"decision": "deny", "reason": "12"}, headers)
    assert taken.status_code == 200, taken.content


def test_the_agents_owner_is_403(
    make_agent_row: Callable[..., Any], make_person: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    owner = make_person("admin")
    request = ApprovalRequest.objects.get(invocation=submit(make_agent_row(owner=owner)))
    answer = decide(Client(), request.id, {"decision": "approve"}, headers=bearer(owner))
    assert answer.status_code == 403 and "you own agent" in answer.json()["error"]["message"]


def test_unknown_request_is_404(make_person: Callable[..., Any]) -> None:
    answer = decide(Client(), "00000000-0000-0000-0000-000000000000", {"decision": "approve"},
                    headers=bearer(make_person("operator")))  # fmt: skip
    assert answer.status_code == 404


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_decisions_exactly_one_wins(
    daphne_server: str,
    make_agent_row: Callable[..., Any],
    make_person: Callable[..., Any],
    submit: Callable[..., Any],
) -> None:
    request = ApprovalRequest.objects.get(invocation=submit(make_agent_row()))
    tokens = [person_token_issue(person=make_person("operator")) for _ in range(20)]
    barrier = threading.Barrier(len(tokens))
    statuses: list[int] = []
    lock = threading.Lock()

    def one(token: str, index: int) -> None:
        body = {"decision": "approve"} if index % 2 else {"decision": "deny", "reason": "race"}
        with httpx.Client(base_url=daphne_server, timeout=30) as http:
            barrier.wait()
            answer = http.post(f"/api/v1/approvals/{request.id}/decide/", json=body,
                               headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        with lock:
            statuses.append(answer.status_code)

    threads = [threading.Thread(target=one, args=(t, i)) for i, t in enumerate(tokens)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200] + [409] * 19
    request.refresh_from_db()
    assert request.decisions.count() == 1 and request.status in ("approved", "denied")


def test_a_call_over_the_tools_max_calls_per_minute_is_429_with_retry_after(
    approval_config: Callable[[str], None],
) -> None:
    from trust_app.services.agents import agent_create

    approval_config("tools:\n  test_echo: {max_calls_per_minute: 1}\n")
    name = f"limited-{uuid.uuid4().hex[:8]}"
    created = agent_create(name=name, access_level="standard", autonomy="full")
    headers = {"Authorization": f"Bearer {created.token}"}
    client = Client()

    def call() -> Any:
        body = json.dumps({"tool": "test_echo", "arguments": {"text": "x"}})
        return client.post(
            "/api/v1/invocations/", body, content_type="application/json", headers=headers
        )

    assert call().status_code == 201
    refused = call()
    assert refused.status_code == 429, refused.content
    assert refused.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
