"""The level that applies on the agents list, the agent page and the permissions preview."""
# ruff: noqa: F811  (pytest fixtures imported from the support module)

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from django.test import Client

from tests.common.permission_suite import signed_in
from tests.trust_app.test_trust_support import trust_config  # noqa: F401
from trust_app.models import Agent
from trust_app.services.agents import agent_create, person_create

pytestmark = pytest.mark.django_db
WEIGHTED_FROM_SANDBOXED = "trust:\n  strategy: weighted\n  initial_level: sandboxed\n"
DISABLED = "trust:\n  strategy: disabled\n"


@pytest.fixture
def admin() -> Client:
    name = f"admin-{uuid.uuid4().hex[:6]}"
    person_create(username=name, role="admin", password=None)
    return signed_in(name)


def _agent(level: str = "elevated") -> Agent:
    return agent_create(name=f"lv-{uuid.uuid4().hex[:8]}", access_level=level).agent


def _between(html: str, start: str, end: str) -> str:
    return html.split(start, 1)[1].split(end, 1)[0]


def _preview(client: Client, agent: Agent, level: str) -> str:
    data = {"access_level": level, "autonomy": agent.autonomy, "action": "preview"}
    response = client.post(f"/agents/{agent.id}/edit/", data)
    assert response.status_code == 200, response.content
    return str(response.content.decode())


def test_the_agents_list_and_page_show_the_level_trust_holds_and_link_the_trust_page(
    trust_config: Callable[[str], None], admin: Client
) -> None:
    trust_config(WEIGHTED_FROM_SANDBOXED)
    agent = _agent("elevated")
    listing = admin.get("/agents/").content.decode()
    row = _between(listing, f'data-agent="{agent.name}"', "</tr>")
    assert "<strong>sandboxed</strong>" in row and 'class="admin-level">elevated<' in row
    page = admin.get(f"/agents/{agent.id}/").content.decode()
    effective = _between(page, 'id="effective-level">', "</td>")
    assert "sandboxed" in effective and "below the admin&#x27;s elevated" in effective
    assert f'href="/agents/{agent.id}/trust/"' in effective
    assert 'id="access-level">elevated<' in page


def test_with_trust_off_the_pages_show_the_admins_level(
    trust_config: Callable[[str], None], admin: Client
) -> None:
    trust_config(DISABLED)
    agent = _agent("elevated")
    row = _between(admin.get("/agents/").content.decode(), f'data-agent="{agent.name}"', "</tr>")
    assert "<strong>elevated</strong>" in row and "trust holds it here" not in row
    page = admin.get(f"/agents/{agent.id}/").content.decode()
    assert '<strong class="">elevated</strong>' in _between(page, 'id="effective-level">', "</td>")


def test_a_preview_that_loses_nothing_because_of_trust_says_why(
    trust_config: Callable[[str], None], admin: Client
) -> None:
    trust_config(WEIGHTED_FROM_SANDBOXED)
    html = _preview(admin, _agent("elevated"), "standard")
    assert _between(html, 'id="unreachable">', "</span>") == "none"
    why = _between(html, 'id="effect-why">', "</p>")
    assert "Trust holds this agent at sandboxed" in why
    assert "sandboxed" in _between(html, 'id="level-after">', "</p>")


def test_positive_control_without_trust_the_same_preview_loses_tools_and_needs_no_why(
    trust_config: Callable[[str], None], admin: Client
) -> None:
    trust_config(DISABLED)
    html = _preview(admin, _agent("elevated"), "restricted")
    assert "shell_command" in _between(html, 'id="unreachable">', "</span>")
    assert 'id="effect-why"' not in html


def test_raising_the_admins_level_while_trust_holds_the_agent_reaches_no_tool_above_trust(
    trust_config: Callable[[str], None], admin: Client
) -> None:
    trust_config(WEIGHTED_FROM_SANDBOXED)
    held = _preview(admin, _agent("restricted"), "elevated")
    # The preview counts trust's hold: the terminal stays out of reach at sandboxed.
    assert "shell_command" not in _between(held, 'id="reachable">', "</span>")
    assert "Trust holds this agent at sandboxed" in _between(held, 'id="effect-why">', "</p>")
    # Positive control: without trust the same change reaches the terminal.
    trust_config(DISABLED)
    free = _preview(admin, _agent("restricted"), "elevated")
    assert "shell_command" in _between(free, 'id="reachable">', "</span>")
