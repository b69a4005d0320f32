"""Who may call the agent API: agent tokens only; people 403, strangers 401."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from django.utils import timezone

from tests.tools_app.api.conftest import AgentClient
from trust_app.models import AgentToken
from trust_app.services.agents import person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_no_token_is_401_with_the_envelope(daphne_server: str) -> None:
    response = httpx.get(daphne_server + "/api/v1/me/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_a_person_token_is_403_on_agent_endpoints(daphne_server: str) -> None:
    person = person_create(username="scripter", role="admin", password=None)
    token = person_token_issue(person=person)
    response = httpx.get(
        daphne_server + "/api/v1/tools/", headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"


def test_a_signed_in_session_is_403_on_agent_endpoints(daphne_server: str) -> None:
    person_create(username="sess", role="operator", password="pw-sess-123456")
    with httpx.Client(base_url=daphne_server) as browser:
        page = browser.get("/accounts/login/")
        csrf = browser.cookies["csrftoken"]
        browser.post(
            "/accounts/login/",
            data={"username": "sess", "password": "pw-sess-123456", "csrfmiddlewaretoken": csrf},
            headers={"Referer": daphne_server + "/accounts/login/"},
        )
        assert page.status_code == 200
        response = browser.get("/api/v1/me/")
    assert response.status_code == 403


def test_a_revoked_or_forged_agent_token_is_401(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    assert client.http.get("/api/v1/me/").status_code == 200
    AgentToken.objects.filter(agent=client.agent).update(revoked_at=timezone.now())
    assert client.http.get("/api/v1/me/").status_code == 401
    forged = client.token[:-4] + "AAAA"
    response = client.http.get("/api/v1/me/", headers={"Authorization": f"Bearer {forged}"})
    assert response.status_code == 401


def test_an_inactive_agent_is_401(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    client.agent.active = False
    client.agent.save(update_fields=["active"])
    assert client.http.get("/api/v1/me/").status_code == 401


def test_me_describes_the_agent(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent("restricted", autonomy="supervised")
    body = client.http.get("/api/v1/me/").json()
    assert body["name"] == client.agent.name
    assert body["access_level"] == "restricted"
    assert body["autonomy"] == "supervised"
    assert isinstance(body["trust"], dict)


def test_agent_calls_carry_the_same_headers_with_or_without_cookies(
    make_agent: Callable[..., AgentClient],
) -> None:
    """Cookieless agent calls take the lean path; the answer must not tell the paths apart."""
    client = make_agent()
    lean = client.http.get("/api/v1/me/")
    full = client.http.get("/api/v1/me/", headers={"Cookie": "unrelated=1"})
    assert lean.status_code == full.status_code == 200
    assert lean.json() == full.json()
    for header in ("X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy", "X-Request-ID"):
        assert lean.headers.get(header), header
        if header != "X-Request-ID":
            assert lean.headers[header] == full.headers[header]
    missing = client.http.get("/api/v1/invocations/00000000-0000-0000-0000-000000000000/")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


def test_asking_to_run_a_tool_is_judged_at_the_door_before_its_body(
    make_agent: Callable[..., AgentClient],
) -> None:
    """The door's checks run in the decision's thread: a forged token with a body that
    asks to wait, or one that cannot be read, is still answered 401 at once, and the
    answers of a good token keep their headers whichever path rendered them."""
    client = make_agent()
    forged = {"Authorization": f"Bearer {client.token[:-4]}AAAA"}
    waiting = {"tool": "read_file", "arguments": {"path": "x"}, "wait": 30}
    for body in (json.dumps(waiting), '{"wait": 30, "tool": '):
        answer = client.http.post(
            "/api/v1/invocations/",
            content=body,
            headers={**forged, "Content-Type": "application/json"},
        )
        assert answer.status_code == 401, body
        assert answer.json()["error"]["code"] == "unauthenticated"
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")
    # Controls: the same unreadable body with the agent's own token is a 400, and an
    # answer the loop rendered carries what every agent answer carries.
    unreadable = client.http.post(
        "/api/v1/invocations/",
        content='{"wait": 30, "tool": ',
        headers={"Content-Type": "application/json"},
    )
    assert unreadable.status_code == 400
    assert unreadable.json()["error"]["code"] == "invalid_argument"
    ran = client.http.post("/api/v1/invocations/", json={**waiting, "wait": 0})
    assert ran.status_code == 201
    assert ran.headers["Content-Type"] == "application/json"
    for header in ("X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy", "X-Request-ID"):
        assert ran.headers.get(header), header


def test_reading_a_call_is_judged_at_the_door_before_its_query(
    make_agent: Callable[..., AgentClient],
) -> None:
    """The door's checks run in the same thread as the read: a forged token that asks
    to wait on a call, or sends a query that cannot be read, is answered 401 at once;
    another agent's call is not found; the owner's answers keep their headers."""
    client, other = make_agent(), make_agent()
    ran = client.http.post(
        "/api/v1/invocations/", json={"tool": "read_file", "arguments": {"path": "x"}, "wait": 0}
    )
    assert ran.status_code == 201
    detail = f"/api/v1/invocations/{ran.json()['id']}/"
    forged = {"Authorization": f"Bearer {client.token[:-4]}AAAA"}
    for query in ("?wait=30", "?wait=forever"):
        answer = client.http.get(detail + query, headers=forged)
        assert answer.status_code == 401, query
        assert answer.json()["error"]["code"] == "unauthenticated"
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")
    # Another agent's token, even one that asks to wait, finds nothing.
    theirs = other.http.get(detail + "?wait=30")
    assert theirs.status_code == 404
    assert theirs.json()["error"]["code"] == "not_found"
    # Controls: the owner's unreadable query is a 400; the owner reads the call, waiting
    # or not, with what every agent answer carries.
    unreadable = client.http.get(detail + "?wait=forever")
    assert unreadable.status_code == 400
    assert unreadable.json()["error"]["code"] == "invalid_argument"
    for query in ("", "?wait=5"):
        read = client.http.get(detail + query)
        assert read.status_code == 200, query
        assert read.json()["id"] == ran.json()["id"]
        assert read.headers["Content-Type"] == "application/json"
        for header in ("X-Content-Type-Options", "X-Frame-Options", "X-Request-ID"):
            assert read.headers.get(header), header
