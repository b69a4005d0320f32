"""The admin's agent editor shows a refused edit or trial call in place: the 400's message
beside the field, the stale preview and its Save button gone. Positive controls beside:
a valid edit previews and saves, a valid call is explained.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.page_checks import HEIGHT, WIDTHS
from tests.browser.test_approvals import PASSWORD
from trust_app.models import Agent
from trust_app.services.agents import agent_create, person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def editor(browser: Any, base: str, width: str) -> tuple[Any, Agent]:
    username = f"admin-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role="admin", password=PASSWORD)
    agent = agent_create(name=f"edited-{uuid.uuid4().hex[:6]}", access_level="standard").agent
    context = browser.new_context(viewport={"width": WIDTHS[width], "height": HEIGHT})
    page = context.new_page()
    page.goto(base + f"/accounts/login/?next=/agents/{agent.id}/edit/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    # The editor's own address, opened by GET, leads to the editor on the agent's page.
    page.wait_for_url(base + f"/agents/{agent.id}/#edit")
    return page, agent


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_refused_try_a_call_shows_the_message_and_drops_the_old_decision(
    width: str, daphne_server: str, browser: Any
) -> None:
    page, _ = editor(browser, daphne_server, width)
    explain = page.locator("#explain")
    # Positive control: a valid call is explained.
    explain.locator("input[name=tool]").fill("read_file")
    explain.locator("textarea").fill('{"path": "notes.txt"}')
    explain.get_by_role("button", name="Explain").click()
    expect(page.locator("#decision")).to_be_visible()

    # Bad JSON: the message in place, the earlier decision gone.
    page.locator("#explain textarea").fill('{"path": ')
    page.locator("#explain").get_by_role("button", name="Explain").click()
    expect(page.locator("#explain .error")).to_contain_text("not JSON")
    expect(page.locator("#decision")).to_have_count(0)

    # An unknown tool: the same.
    page.locator("#explain textarea").fill('{"path": "notes.txt"}')
    page.locator("#explain input[name=tool]").fill("no_such_tool")
    page.locator("#explain").get_by_role("button", name="Explain").click()
    expect(page.locator("#explain [role=alert], #explain .error").first).to_contain_text(
        "no_such_tool"
    )
    expect(page.locator("#decision")).to_have_count(0)
    page.context.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_refused_edit_shows_the_message_and_removes_the_stale_preview_and_save(
    width: str, daphne_server: str, browser: Any
) -> None:
    page, agent = editor(browser, daphne_server, width)
    # Positive control: a valid change previews with a Save button.
    page.select_option("#id_access_level", "restricted")
    page.click("#preview")
    expect(page.locator("#effect")).to_be_visible()
    expect(page.locator("#save")).to_be_visible()

    # A sub-constraint that is not a mapping: the message at the field, no preview, no Save.
    page.fill("#id_sub_constraints", "- just a list")
    page.click("#preview")
    expect(page.locator("[data-field=sub_constraints]")).to_contain_text("mapping")
    expect(page.locator("#effect")).to_have_count(0)
    expect(page.locator("#save")).to_have_count(0)

    # An unknown tool in the allowed list: the same.
    page.fill("#id_sub_constraints", "")
    page.fill("#id_allowed", "no_such_tool")
    page.click("#preview")
    expect(page.locator("#edit [role=alert]").first).to_contain_text("no_such_tool")
    expect(page.locator("#save")).to_have_count(0)

    # Fixed, it previews and saves.
    page.fill("#id_allowed", "")
    page.click("#preview")
    page.click("#save")
    expect(page.locator("#access-level")).to_have_text("restricted")
    agent.refresh_from_db()
    assert agent.access_level == "restricted"
    page.context.close()
