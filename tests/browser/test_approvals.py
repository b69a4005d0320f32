"""Operators decide live in Chromium while agents wait on their calls."""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from django.db import connection
from playwright.sync_api import expect

from approvals_app.models import ApprovalRequest
from approvals_app.services import approvals_expire_due
from trust_app.services.agents import agent_create, person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]
PASSWORD = "pw-browser-approvals-1"


class Agent:
    def __init__(self, base: str, autonomy: str = "locked") -> None:
        created = agent_create(
            name=f"agent-{uuid.uuid4().hex[:8]}", access_level="standard", autonomy=autonomy
        )
        self.name = created.agent.name
        self.http = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {created.token}"}, timeout=90
        )

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = self.http.post("/api/v1/invocations/", json={"tool": tool, "arguments": arguments})
        assert answer.status_code == 201, answer.text
        return answer.json()

    def wait_in_background(self, invocation_id: str) -> Callable[[], dict[str, Any]]:
        """Start a waiting GET now; the returned function joins it and gives the answer."""
        box: dict[str, Any] = {}

        def run() -> None:
            box["answer"] = self.http.get(
                f"/api/v1/invocations/{invocation_id}/", params={"wait": 60}
            ).json()

        thread = threading.Thread(target=run)
        thread.start()

        def result() -> dict[str, Any]:
            thread.join(timeout=90)
            return box["answer"]

        return result


def in_thread(work: Callable[[], Any]) -> Any:
    """Run a service outside Playwright's event loop (its live push is synchronous)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = work()
        finally:
            connection.close()  # the thread's own connection, so none outlives the test

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    return box["result"]


@pytest.fixture
def agent_factory(daphne_server: str) -> Iterator[Callable[..., Agent]]:
    made: list[Agent] = []

    def make(autonomy: str = "locked") -> Agent:
        made.append(Agent(daphne_server, autonomy))
        return made[-1]

    yield make
    for agent in made:
        agent.http.close()


def sign_in(browser: Any, base: str, role: str) -> Any:
    username = f"{role}-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role=role, password=PASSWORD)
    context = browser.new_context()
    page = context.new_page()
    page.goto(base + "/accounts/login/?next=/approvals/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.username = username
    return page


def open_inbox(browser: Any, base: str, role: str = "operator") -> Any:
    page = sign_in(browser, base, role)
    page.wait_for_url(base + "/approvals/")
    expect(page.locator("body[data-live=open]")).to_have_count(1, timeout=10_000)
    return page


@pytest.mark.django_db(transaction=True)
def test_a_new_request_appears_live_and_approving_runs_the_waiting_call(
    daphne_server: str,
    celery_worker_process: Any,
    browser: Any,
    agent_factory: Callable[..., Agent],
) -> None:
    page = open_inbox(browser, daphne_server)
    agent = agent_factory()
    invocation = agent.call("test_echo", {"text": "hello from the agent"})
    assert invocation["status"] == "pending_approval"
    row = page.locator(f"#req-{invocation['approval']['id']}")
    expect(row).to_be_visible(timeout=1000)  # pushed, no reload
    expect(row.locator(".tool")).to_have_text("test_echo")
    expect(row.locator(".countdown")).to_have_text(re.compile(r"^in \d+ (min|h)"))
    expect(page.locator("#pending-count")).to_have_text("1")
    waiting = agent.wait_in_background(invocation["id"])
    row.get_by_role("button", name="Approve").click()
    expect(page.locator("#decide-feedback")).to_contain_text("you approved it")
    expect(row.locator(".verdict")).to_have_text(f"approved by {page.username}")
    answer = waiting()
    assert answer["status"] == "succeeded", answer
    assert answer["result"]["content"].strip() == "hello from the agent"
    expect(page.locator("#pending-count")).to_have_text("0")
    page.context.close()


@pytest.mark.django_db(transaction=True)
def test_deny_with_a_reason_reaches_the_agent(
    daphne_server: str, browser: Any, agent_factory: Callable[..., Agent]
) -> None:
    page = open_inbox(browser, daphne_server)
    agent = agent_factory()
    invocation = agent.call("test_echo", {"text": "rm everything"})
    row = page.locator(f"#req-{invocation['approval']['id']}")
    expect(row).to_be_visible(timeout=1000)
    waiting = agent.wait_in_background(invocation["id"])
    row.get_by_role("button", name="Deny").click()
    expect(page.locator("#decide-feedback")).to_contain_text("needs a reason")
    row.locator("input[name^=reason-]").fill("not on a Friday")
    row.get_by_role("button", name="Deny").click()
    expect(row.locator(".verdict")).to_have_text(f"denied by {page.username}")
    answer = waiting()
    assert answer["status"] == "denied"
    assert answer["error"]["message"] == f"denied by {page.username}: not on a Friday"
    page.context.close()


@pytest.mark.django_db(transaction=True)
def test_two_operators_race_and_exactly_one_wins(
    daphne_server: str, browser: Any, agent_factory: Callable[..., Agent]
) -> None:
    first, second = open_inbox(browser, daphne_server), open_inbox(browser, daphne_server, "admin")
    invocation = agent_factory().call("test_echo", {"text": "race"})
    selector = f"#req-{invocation['approval']['id']} button.approve"
    for page in (first, second):
        expect(page.locator(selector)).to_be_visible(timeout=1000)
    # Both click before either answer can arrive: the server decides who won.
    first.evaluate(f"document.querySelector('{selector}').click()")
    second.evaluate(f"document.querySelector('{selector}').click()")
    feedback = [p.locator("#decide-feedback li") for p in (first, second)]
    for item in feedback:
        expect(item).to_have_count(1, timeout=10_000)
    texts = sorted(item.inner_text() for item in feedback)
    winners = [t for t in texts if t.endswith("you approved it")]
    losers = [t for t in texts if "already approved by" in t]
    assert len(winners) == 1 and len(losers) == 1, texts
    winner = first if "you approved it" in feedback[0].inner_text() else second
    assert losers[0].endswith(f"already approved by {winner.username}")
    request = ApprovalRequest.objects.get(id=invocation["approval"]["id"])
    assert request.decisions.count() == 1
    for page in (first, second):
        page.context.close()


@pytest.mark.django_db(transaction=True)
def test_expiry_shows_in_the_page(
    daphne_server: str, browser: Any, agent_factory: Callable[..., Agent]
) -> None:
    page = open_inbox(browser, daphne_server)
    agent = agent_factory()
    invocation = agent.call("test_echo", {"text": "too slow"})
    row = page.locator(f"#req-{invocation['approval']['id']}")
    expect(row).to_be_visible(timeout=1000)
    from django.utils import timezone

    ApprovalRequest.objects.filter(id=invocation["approval"]["id"]).update(
        expires_at=timezone.now()
    )
    assert in_thread(approvals_expire_due) == 1
    expect(row.locator(".verdict")).to_have_text("expired", timeout=2000)
    expect(row.get_by_role("button", name="Approve")).to_have_count(0)
    answer = agent.http.get(f"/api/v1/invocations/{invocation['id']}/").json()
    assert answer["status"] == "expired" and answer["approval"]["status"] == "expired"
    page.context.close()


@pytest.mark.django_db(transaction=True)
def test_an_auditor_sees_no_decide_button_and_a_forged_post_is_403(
    daphne_server: str, browser: Any, agent_factory: Callable[..., Agent]
) -> None:
    invocation = agent_factory().call("test_echo", {"text": "x"})
    page = sign_in(browser, daphne_server, "auditor")
    page.wait_for_load_state()
    assert page.goto(daphne_server + "/approvals/").status == 403
    expect(page.locator("button.approve")).to_have_count(0)
    page.goto(daphne_server + "/")
    expect(page.locator("#pending-count")).to_have_count(0)
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    headers = {"X-CSRFToken": csrf, "Referer": daphne_server + "/"}
    approval_id = invocation["approval"]["id"]
    forged = page.request.post(
        daphne_server + f"/api/v1/approvals/{approval_id}/decide/",
        data={"decision": "approve"}, headers=headers,
    )  # fmt: skip
    assert forged.status == 403
    page_form = page.request.post(
        daphne_server + "/approvals/decide/",
        form={"only": approval_id, "decision": "approve"}, headers=headers,
    )  # fmt: skip
    assert page_form.status == 403
    assert ApprovalRequest.objects.get(id=approval_id).status == "pending"
    page.context.close()
