"""An admin restricts an agent in a real browser, and the agent's next web call is refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from audit_app.models import AuditEvent
from tests.tools_app.api.conftest import AgentClient, make_agent  # noqa: F401 - fixture
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]

PASSWORD = "pw-admin-browser-1"


def sign_in(page: Any, base: str, username: str) -> None:
    page.goto(base + "/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(base + "/")


def web_call(client: AgentClient, key: str) -> dict[str, Any]:
    response = client.call(
        "http_request", {"url": "https://unlisted.example.com/data"}, idempotency_key=key
    )
    assert response.status_code == 201, response.text
    return response.json()


@pytest.mark.django_db(transaction=True)
def test_admin_moves_an_agent_to_restricted_and_its_next_web_call_is_refused(
    daphne_server: str,
    page: Any,
    make_agent: Callable[..., AgentClient],  # noqa: F811 - the fixture imported above
) -> None:
    client = make_agent("standard")
    before = web_call(client, "before")
    assert before["status"] != "denied", before["decision"]

    person_create(username="ada", role="admin", password=PASSWORD)
    sign_in(page, daphne_server, "ada")
    page.click("nav >> text=Agents")
    page.click(f"text={client.agent.name}")
    assert page.locator("#access-level").inner_text() == "standard"
    page.select_option("#id_access_level", "restricted")
    page.click("#preview")
    page.wait_for_selector("#effect")
    assert "shell_command" in page.locator("#unreachable").inner_text()
    page.click("#save")
    page.wait_for_selector(".messages")
    assert page.locator("#access-level").inner_text() == "restricted"
    event = AuditEvent.objects.get(kind="agent.permissions_updated", agent_id=client.agent.id)
    assert event.data["before"]["access_level"] == "standard"
    assert event.data["after"]["access_level"] == "restricted"

    after = web_call(client, "after")
    assert after["status"] == "denied"
    assert after["decision"]["outcome"] == "deny"
    assert "allowlist" in after["decision"]["reason"].lower()
