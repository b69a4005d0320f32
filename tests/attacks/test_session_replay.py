"""A session row read from the database is not a cookie: replaying it gets nothing.

The attack: something that can read the console's database copies the session
table and presents a stored value as the ``sessionid`` cookie to approve a
supervised agent's write. The control: the real cookie of the same session
does reach the inbox and does decide.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import httpx
import pytest
from django.contrib.sessions.models import Session

from tests.tools_app.api.conftest import AgentClient
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-replay-0123456789"


def _sign_in(base: str, username: str) -> httpx.Client:
    browser = httpx.Client(base_url=base, timeout=30)
    browser.get("/accounts/login/")
    response = browser.post(
        "/accounts/login/",
        data={
            "username": username,
            "password": PASSWORD,
            "csrfmiddlewaretoken": browser.cookies["csrftoken"],
        },
        headers={"Referer": base + "/accounts/login/"},
    )
    assert response.status_code == 302, response.text[:500]
    assert "sessionid" in browser.cookies
    return browser


def _decide(client: httpx.Client, approval_id: str, csrf: str) -> httpx.Response:
    return client.post(
        f"/api/v1/approvals/{approval_id}/decide/",
        json={"decision": "approve", "reason": "looks fine"},
        headers={"X-CSRFToken": csrf},
    )


def test_a_stolen_session_row_cannot_approve_a_supervised_write(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    person_create(username="replay-operator", role="operator", password=PASSWORD)
    agent = make_agent("standard", autonomy="supervised")
    submitted = agent.call(
        "write_file",
        {"path": "planted.txt", "content": "from the attacker"},
        idempotency_key="replay-write-1",
    )
    assert submitted.status_code == 201, submitted.text
    pending = submitted.json()
    assert pending["status"] == "pending_approval"
    approval_id = pending["approval"]["id"]

    operator = _sign_in(daphne_server, "replay-operator")
    with contextlib.closing(operator):
        real_cookie = operator.cookies["sessionid"]
        csrf = operator.cookies["csrftoken"]
        rows = list(Session.objects.values_list("session_key", flat=True))
        assert rows, "the sign-in stored a session"
        assert real_cookie not in rows, "the session table holds the cookie's value"

        for stolen in rows:
            with httpx.Client(
                base_url=daphne_server,
                cookies={"sessionid": stolen, "csrftoken": csrf},
                timeout=30,
            ) as attacker:
                page = attacker.get("/approvals/")
                assert page.status_code == 302
                assert page.headers["Location"].startswith("/accounts/login/")
                listing = attacker.get("/api/v1/approvals/", params={"status": "pending"})
                assert listing.status_code in (401, 403), listing.text
                decided = _decide(attacker, approval_id, csrf)
                assert decided.status_code in (401, 403), decided.text
        still = agent.get(pending["id"]).json()
        assert still["status"] == "pending_approval"
        assert still["approval"]["status"] == "pending"

        # Control: the real cookie reaches the inbox and its decision counts.
        assert operator.get("/approvals/").status_code == 200
        listing = operator.get("/api/v1/approvals/", params={"status": "pending"})
        assert listing.status_code == 200
        assert approval_id in {row["id"] for row in listing.json()["results"]}
        decided = _decide(operator, approval_id, csrf)
        assert decided.status_code == 200, decided.text
        assert decided.json()["status"] == "approved"


def test_signing_out_removes_the_stored_session(daphne_server: str) -> None:
    """The store finds its own rows by the hashed key: sign-out deletes the row."""
    person_create(username="replay-leaver", role="auditor", password=PASSWORD)
    person = _sign_in(daphne_server, "replay-leaver")
    with contextlib.closing(person):
        assert Session.objects.count() == 1
        assert person.get("/audit/").status_code == 200
        response = person.post(
            "/accounts/logout/", headers={"X-CSRFToken": person.cookies["csrftoken"]}
        )
        assert response.status_code in (200, 302)
        assert Session.objects.count() == 0
        assert person.get("/audit/").status_code == 302
