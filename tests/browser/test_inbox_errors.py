"""A decision that fails says so on its request and leaves it actionable; the inbox works
from the keyboard and announces what changes.

Each failure has its positive control beside it: the same button, once the fault is
gone, decides.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from approvals_app.models import ApprovalRequest, ApprovalStatus
from tests.browser.page_checks import HEIGHT, WIDTHS
from tests.browser.test_approvals import PASSWORD, Agent
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]
DECIDE = "**/approvals/decide/"


def inbox_for(browser: Any, base: str, role: str, width: str) -> Any:
    username = f"{role}-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role=role, password=PASSWORD)
    context = browser.new_context(viewport={"width": WIDTHS[width], "height": HEIGHT})
    page = context.new_page()
    page.goto(base + "/accounts/login/?next=/approvals/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(base + "/approvals/")
    expect(page.locator("body[data-live=open]")).to_have_count(1, timeout=10_000)
    page.username = username
    return page


@pytest.fixture
def agent(daphne_server: str) -> Iterator[Agent]:
    made = Agent(daphne_server)
    yield made
    made.http.close()


def pending_row(page: Any, agent: Agent, text: str) -> tuple[Any, str]:
    invocation = agent.call("test_echo", {"text": text})
    request_id = invocation["approval"]["id"]
    row = page.locator(f"#req-{request_id}")
    expect(row).to_be_visible(timeout=5000)
    return row, request_id


def still_pending(request_id: str) -> bool:
    return ApprovalRequest.objects.get(id=request_id).status == ApprovalStatus.PENDING


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("role", ["operator", "admin"])
def test_a_failed_decision_is_told_on_its_card_and_the_card_stays_actionable(
    role: str, width: str, daphne_server: str, browser: Any, agent: Agent
) -> None:
    page = inbox_for(browser, daphne_server, role, width)
    row, request_id = pending_row(page, agent, f"decide me {role} {width}")
    approve = row.get_by_role("button", name="Approve")
    error = row.locator(".action-error")

    # The network fails: nothing was decided, and the card says so.
    page.route(DECIDE, lambda route: route.abort("connectionrefused"))
    approve.click()
    expect(error).to_contain_text("could not be reached")
    expect(approve).to_be_enabled()
    assert still_pending(request_id)

    # The server fails: the card says that too.
    page.unroute(DECIDE)
    page.route(DECIDE, lambda route: route.fulfill(status=500, body="<h1>boom</h1>"))
    approve.click()
    expect(error).to_contain_text("(500)")
    expect(approve).to_be_enabled()
    assert still_pending(request_id)

    # The session ended: the card says to sign in again, with a link that leads back here.
    page.unroute(DECIDE)
    cookies = page.context.cookies()
    page.context.clear_cookies(name="sessionid")
    approve.click()
    expect(error).to_contain_text("signed out")
    link = error.get_by_role("link", name="Sign in again")
    expect(link).to_have_attribute("href", "/accounts/login/?next=%2Fapprovals%2F")
    expect(page.locator("#decide-feedback form")).to_have_count(0)  # no login form swapped in
    assert still_pending(request_id)

    # Positive control: signed in again, the same button decides.
    page.context.add_cookies(cookies)
    approve.click()
    expect(row.locator(".verdict")).to_have_text(f"approved by {page.username}")
    expect(error).to_have_count(0)
    page.context.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_denial_without_a_reason_is_told_at_the_reason_field(
    width: str, daphne_server: str, browser: Any, agent: Agent
) -> None:
    page = inbox_for(browser, daphne_server, "operator", width)
    row, request_id = pending_row(page, agent, "deny me")
    reason = row.locator("input[name^=reason-]")
    row.get_by_role("button", name="Deny").click()
    message = row.locator(".actions .action-error")
    expect(message).to_contain_text("a denial needs a reason")
    expect(reason).to_have_attribute("aria-invalid", "true")
    expect(reason).to_be_focused()
    assert message.evaluate("el => el.id") == reason.get_attribute("aria-describedby")
    assert still_pending(request_id)
    # From the toolbar, the message sits at the toolbar's reason field.
    row.locator("input[name=ids]").check()
    page.locator(".toolbar").get_by_role("button", name="Deny selected").click()
    expect(page.locator(".toolbar .action-error")).to_contain_text("a denial needs a reason")
    expect(page.locator(".toolbar input[name=reason]")).to_be_focused()
    # Positive control: with a reason the denial goes through.
    reason.fill("not today")
    row.get_by_role("button", name="Deny").click()
    expect(row.locator(".verdict")).to_have_text(f"denied by {page.username}")
    page.context.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_inbox_works_from_the_keyboard_and_announces_changes(
    width: str, daphne_server: str, browser: Any, agent: Agent
) -> None:
    page = inbox_for(browser, daphne_server, "admin", width)
    first, _ = pending_row(page, agent, "first")
    expect(page.locator("#inbox-announcer")).to_contain_text("New request: test_echo")
    second, _ = pending_row(page, agent, "second")
    third, third_id = pending_row(page, agent, "third")
    page.locator("h1").click()  # focus on the page, in no field

    page.keyboard.press("j")
    expect(first).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(second).to_be_focused()
    page.keyboard.press("k")
    expect(first).to_be_focused()
    outline = first.evaluate("el => getComputedStyle(el).outlineStyle")
    assert outline != "none"  # focus is visible

    # Select all, then none.
    page.keyboard.press("Shift+X")
    expect(page.locator(".inbox .approval input[name=ids]:checked")).to_have_count(3)
    page.keyboard.press("Shift+X")
    expect(page.locator(".inbox .approval input[name=ids]:checked")).to_have_count(0)
    page.keyboard.press("x")
    expect(first.locator("input[name=ids]")).to_be_checked()

    # Each request's checkbox is named by its request; the time left reads "in N min".
    for row, text in ((first, "first"), (second, "second"), (third, "third")):
        name = f"select test_echo {text} by {agent.name}"
        expect(row.get_by_role("checkbox", name=name, exact=True)).to_have_count(1)
        expect(row.locator(".countdown")).to_have_text(re.compile(r"^in \d+ (min|h)"))

    # Approve the current request: the focus moves on to the next one, not to the page.
    page.keyboard.press("a")
    expect(first.locator(".verdict")).to_have_text(f"approved by {page.username}")
    expect(page.locator("#inbox-announcer")).to_contain_text(f"approved by {page.username}")
    expect(second).to_be_focused()

    # Deny asks for a reason first; Enter in the field denies, and the next one has the focus.
    page.keyboard.press("d")
    expect(second.locator("input[name^=reason-]")).to_be_focused()
    page.keyboard.type("not by keyboard")
    page.keyboard.press("Enter")
    expect(second.locator(".verdict")).to_have_text(f"denied by {page.username}")
    expect(third).to_be_focused()
    page.keyboard.press("k")  # no open request before it: the focus stays, in its place
    expect(third).to_be_focused()
    # Esc from a field returns to its request.
    third.locator("input[name^=reason-]").focus()
    page.keyboard.press("Escape")
    expect(third).to_be_focused()
    assert still_pending(third_id)
    page.context.close()
