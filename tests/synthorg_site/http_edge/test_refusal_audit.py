"""Refused decisions and refusals of the HTTP layer leave an audit row (a flood, one
summary a minute); beside each refusal, the allowed request works."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from django.conf import settings

from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent
from audit_app.refusals import COUNTED_KIND, request_refusals_summarise
from tests.approvals_app.conftest import PASSWORD
from tests.synthorg_site.http_edge.conftest import (
    assert_envelope,
    refusals_for,
    stranger_budget_reset,
)
from tests.tools_app.api.conftest import AgentClient
from trust_app.services.agents import person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def http(daphne_server: str) -> Iterator[Callable[..., httpx.Client]]:
    clients: list[httpx.Client] = []

    def make(headers: dict[str, str] | None = None) -> httpx.Client:
        client = httpx.Client(base_url=daphne_server, headers=headers or {}, timeout=60)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def token_of(person: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {person_token_issue(person=person)}"}


@pytest.fixture
def pending(make_agent_row: Callable[..., Any], submit: Callable[..., Any]) -> ApprovalRequest:
    return ApprovalRequest.objects.get(invocation=submit(make_agent_row(autonomy="locked")))


def decide_path(request: ApprovalRequest) -> str:
    return f"/api/v1/approvals/{request.id}/decide/"


def test_an_auditor_deciding_is_refused_and_audited(
    pending: ApprovalRequest, make_person: Callable[..., Any], http: Callable[..., httpx.Client]
) -> None:
    auditor = make_person("auditor")
    refused = http(token_of(auditor)).post(decide_path(pending), json={"decision": "approve"})
    assert_envelope(refused, 403, "forbidden", "operators")
    [event] = refusals_for(refused)
    assert (event.actor_type, event.actor_name) == ("person", auditor.username)
    assert event.data["path"] == decide_path(pending) and event.outcome == "forbidden"
    # Positive control: an operator's same decision is taken.
    operator = make_person("operator")
    taken = http(token_of(operator)).post(decide_path(pending), json={"decision": "approve"})
    assert taken.status_code == 200, taken.text
    assert refusals_for(taken) == []


def test_an_agent_deciding_is_refused_and_audited(
    pending: ApprovalRequest,
    make_agent: Callable[..., AgentClient],
    make_person: Callable[..., Any],
    http: Callable[..., httpx.Client],
) -> None:
    agent = make_agent()
    refused = agent.http.post(decide_path(pending), json={"decision": "approve"})
    assert_envelope(refused, 403, "forbidden", "agent tokens are refused")
    [event] = refusals_for(refused)
    assert event.actor_type == "agent" and event.agent_id == agent.agent.id
    taken = http(token_of(make_person("operator"))).post(
        decide_path(pending), json={"decision": "deny", "reason": "not now"}
    )
    assert taken.status_code == 200, taken.text


def test_a_second_decision_is_409_and_audited(
    pending: ApprovalRequest, make_person: Callable[..., Any], http: Callable[..., httpx.Client]
) -> None:
    first = http(token_of(make_person("operator"))).post(
        decide_path(pending), json={"decision": "approve"}
    )
    assert first.status_code == 200, first.text
    late = make_person("operator")
    again = http(token_of(late)).post(
        decide_path(pending), json={"decision": "deny", "reason": "x"}
    )
    assert_envelope(again, 409, "conflict", "already approved")
    [event] = refusals_for(again)
    assert event.actor_name == late.username and event.outcome == "conflict"


@pytest.mark.parametrize(
    "body, needle",
    [
        ({"decision": "maybe"}, "decision"),
        ({"decision": "deny"}, "a denial needs a reason"),
        ({"decision": "approve", "arguments_hash": "nope"}, "arguments_hash"),
    ],
)
def test_a_malformed_decision_is_400_and_audited(
    body: dict[str, Any],
    needle: str,
    pending: ApprovalRequest,
    make_person: Callable[..., Any],
    http: Callable[..., httpx.Client],
) -> None:
    client = http(token_of(make_person("operator")))
    refused = client.post(decide_path(pending), json=body)
    assert_envelope(refused, 400, "invalid_argument", needle)
    assert len(refusals_for(refused)) == 1
    pending.refresh_from_db()
    assert pending.status == "pending", "a refused decision changes nothing"
    assert client.post(decide_path(pending), json={"decision": "approve"}).status_code == 200


def _signed_in(daphne_server: str, username: str) -> httpx.Client:
    session = httpx.Client(base_url=daphne_server, timeout=60)
    session.get("/accounts/login/")
    answer = session.post(
        "/accounts/login/",
        data={
            "username": username,
            "password": PASSWORD,
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
    )
    assert answer.status_code == 302, answer.text[:500]
    return session


def test_a_session_without_the_csrf_header_is_refused_in_the_envelope(
    daphne_server: str, pending: ApprovalRequest, make_person: Callable[..., Any]
) -> None:
    operator = make_person("operator")
    session = _signed_in(daphne_server, operator.username)
    try:
        refused = session.post(decide_path(pending), json={"decision": "approve"})
        assert_envelope(refused, 403, "forbidden", "CSRF")
        [event] = refusals_for(refused)
        assert event.actor_name == operator.username
        pending.refresh_from_db()
        assert pending.status == "pending"
        # Positive control: the same session with its CSRF token decides.
        taken = session.post(
            decide_path(pending),
            json={"decision": "approve"},
            headers={"X-CSRFToken": session.cookies["csrftoken"]},
        )
        assert taken.status_code == 200, taken.text
    finally:
        session.close()


def test_a_flood_of_bad_requests_is_counted_in_one_summary(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    budget = settings.SYNTHORG_REFUSAL_AUDIT_PER_MINUTE
    extra = 3
    # The budget is per calendar minute: the flood starts well inside one (a slow machine
    # may still cross into the next, whose budget then takes the rest one by one).
    while 60 - time.time() % 60 < 15:
        time.sleep(0.5)
    started = time.time()
    for _ in range(budget + extra):
        answer = client.http.post(
            "/api/v1/invocations/", content=b"{", headers={"Content-Type": "application/json"}
        )
        assert answer.status_code == 400
    audited = AuditEvent.objects.filter(kind="request.refused", agent_id=client.agent.id).count()
    turned = int(time.time() // 60) != int(started // 60)
    if turned:
        # The minute turned mid-flood: the budget applied to each minute separately.
        assert budget <= audited <= budget + extra
    else:
        assert audited == budget, "every refusal within the budget is audited one by one"
    # The sweep, run once the minute is over, counts the rest in one event a minute.
    request_refusals_summarise(now=time.time() + 120)
    summaries = list(
        AuditEvent.objects.filter(kind=COUNTED_KIND, data__client=f"agent:{client.agent.id}")
    )
    counted = sum(int(event.data["counted"]) for event in summaries)
    assert audited + counted == budget + extra, (audited, counted)
    assert all(event.actor_type == "system" for event in summaries)
    # Nothing left to count only when the next minute's budget took the rest.
    assert summaries if not turned else bool(summaries) == (counted > 0), (turned, counted)


def test_an_unknown_api_path_without_a_token_is_audited_by_address(
    http: Callable[..., httpx.Client],
) -> None:
    stranger = http()
    stranger_budget_reset()
    path = f"/api/v1/{uuid.uuid4().hex}/"
    answer = stranger.get(path)
    assert_envelope(answer, 404, "not_found", path)
    [event] = refusals_for(answer)
    assert event.actor_type == "anonymous" and event.actor_name == "127.0.0.1"
    assert stranger.get("/healthz").status_code in (200, 503)
