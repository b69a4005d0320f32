"""Live verdicts in Chromium: an admin lowers an agent's level under an open inbox.

The request the lower level refuses turns into a withdrawn row with the reason and no
Approve button, live, and the waiting agent is told; the request the lower level still
permits keeps its buttons. A change that would let a call run without a person marks
its card, and the call still waits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from audit_app.record import Actor
from tests.browser.test_approvals import Agent, agent_factory, in_thread, open_inbox
from trust_app.models import Agent as AgentRow
from trust_app.services.agents import person_create
from trust_app.services.permissions import agent_permissions_update

pytestmark = [pytest.mark.browser, pytest.mark.integration]
__all__ = ["agent_factory"]  # the fixture, shared with the other inbox tests


def _change(name: str, **changes: Any) -> None:
    row = AgentRow.objects.get(name=name)
    admin = person_create(username=f"admin-{name}", role="admin", password=None)
    given: dict[str, Any] = {
        "access_level": row.access_level,
        "autonomy": row.autonomy,
        "allowed": [],
        "denied": [],
        "sub_constraints": {},
        "max_concurrent_calls": row.max_concurrent_calls,
        **changes,
    }
    agent_permissions_update(agent=row, actor=Actor.person(admin), **given)


@pytest.mark.django_db(transaction=True)
def test_lowering_the_level_withdraws_the_card_live_and_tells_the_agent(
    daphne_server: str, browser: Any, agent_factory: Callable[..., Agent]
) -> None:
    page = open_inbox(browser, daphne_server)
    agent = agent_factory()
    doomed = agent.call("shell_command", {"argv": ["ls", "-la"]})
    kept = agent.call("test_echo", {"text": "every level may"})
    doomed_row = page.locator(f"#req-{doomed['approval']['id']}")
    kept_row = page.locator(f"#req-{kept['approval']['id']}")
    expect(doomed_row.get_by_role("button", name="Approve")).to_be_visible(timeout=5000)
    expect(kept_row.get_by_role("button", name="Approve")).to_be_visible(timeout=5000)
    waiting = agent.wait_in_background(doomed["id"])

    in_thread(lambda: _change(agent.name, access_level="restricted"))

    expect(doomed_row.locator(".verdict")).to_contain_text(
        "withdrawn: the current policy refuses it", timeout=10_000
    )
    expect(doomed_row.locator(".verdict")).to_contain_text("does not permit category terminal")
    expect(doomed_row.get_by_role("button", name="Approve")).to_have_count(0)
    answer = waiting()
    assert answer["status"] == "denied", answer
    assert answer["error"]["code"] == "no_longer_permitted", answer
    # Control: the call the lower level permits is still there to decide.
    expect(kept_row.get_by_role("button", name="Approve")).to_be_visible()
    expect(kept_row.locator("[data-verdict-now]")).to_have_count(0)
    page.context.close()


@pytest.mark.django_db(transaction=True)
def test_a_change_that_would_stop_asking_marks_the_card_and_the_call_still_waits(
    daphne_server: str, browser: Any, agent_factory: Callable[..., Agent]
) -> None:
    page = open_inbox(browser, daphne_server)
    agent = agent_factory()
    asked = agent.call("test_echo", {"text": "asked while locked"})
    row = page.locator(f"#req-{asked['approval']['id']}")
    expect(row.get_by_role("button", name="Approve")).to_be_visible(timeout=5000)
    expect(row.locator("[data-verdict-now]")).to_have_count(0)

    in_thread(lambda: _change(agent.name, autonomy="full"))

    expect(row.locator("[data-verdict-now=no_ask]")).to_contain_text(
        "the current policy would no longer ask a person", timeout=10_000
    )
    expect(row.get_by_role("button", name="Approve")).to_be_visible()
    answer = agent.http.get(f"/api/v1/invocations/{asked['id']}/").json()
    assert answer["status"] == "pending_approval", answer
    page.context.close()
