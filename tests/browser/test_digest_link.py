"""A digest's link, in Chromium at 1280 and 390 px: the inbox opens with that agent's
waiting requests selected (another agent's are not), and nothing is decided by it."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from approvals_app.models import ApprovalRequest, ApprovalStatus
from notifications_app.messages import agent_inbox_link
from tests.browser.page_checks import WIDTHS, axe_findings, axe_source, width_findings
from tests.browser.test_inbox_errors import inbox_for
from tests.browser.test_inbox_floods import locked_agent, writes

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_digests_link_opens_the_inbox_with_the_agents_requests_selected(
    width: str, daphne_server: str, browser: Any
) -> None:
    flooding, other = locked_agent("digest"), locked_agent("quiet")
    writes(flooding, 30, lambda n: f"d{n}/notes.txt")
    writes(other, 5, lambda n: f"o{n}/notes.txt")
    page = inbox_for(browser, daphne_server, "operator", width)
    # Control: the inbox opened plainly selects nothing.
    expect(page.locator("#selected-count")).to_have_text("none selected")
    link = agent_inbox_link(daphne_server, flooding.name)
    assert link.endswith(f"/approvals/?agent={quote(flooding.name)}")
    page.goto(link)
    expect(page.locator("#selected-count")).to_have_text(
        f"30 selected (30 requests by {flooding.name})", timeout=30_000
    )
    problems = width_findings(page) + axe_findings(page, axe_source())
    assert not problems, "\n".join(problems)
    # Opening the link decided nothing.
    assert ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING).count() == 35
    page.context.close()
