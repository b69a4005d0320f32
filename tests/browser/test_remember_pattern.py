"""Remember a pattern in Chromium at 1280 and 390 px: the form opens with the folder as a
starting pattern, the person sees what it would have let through among the agent's recent
calls, and approves with exactly that pattern. No sideways scroll, axe-core clean."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from playwright.sync_api import expect

from approvals_app.models import ApprovalGrant, ApprovalRequest, ApprovalStatus
from approvals_app.services import approvals_decide_each
from tests.browser.inbox_page import open_inbox_at
from tests.browser.page_checks import axe_findings, axe_source, width_findings
from tests.support.pending import submitted
from trust_app.services.agents import agent_create, person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", (1280, 390))
def test_a_pattern_is_seen_against_recent_calls_before_it_is_remembered(
    daphne_server: str, browser: Any, width: int
) -> None:
    agent = agent_create(
        name=f"pattern-{uuid.uuid4().hex[:6]}", access_level="standard", autonomy="locked"
    ).agent
    earlier = [
        submitted(agent, "write_file", {"path": f"q/{n}.txt", "content": "x"}) for n in range(3)
    ]
    reviewer = person_create(username=f"rev-{uuid.uuid4().hex[:6]}", role="operator", password=None)
    approvals_decide_each(
        requests=[str(r.id) for r in earlier], person=reviewer, decision="approve"
    )
    submitted(agent, "write_file", {"path": "other/x.txt", "content": "x"})
    pending = submitted(agent, "write_file", {"path": "q/new.txt", "content": "hello"})

    page = open_inbox_at(browser, daphne_server, width)
    row = page.locator(f"#req-{pending.id}")
    expect(row).to_be_visible(timeout=10_000)
    row.get_by_role("button", name="Remember a pattern…").click()
    glob = row.get_by_label("path matches")
    expect(glob).to_have_value("q/*")
    row.get_by_role("button", name="What would it let through?").click()
    reach = row.locator(".reach")
    expect(reach).to_contain_text("path matches q/* covers 3 of the 4 write_file calls")
    expect(reach).to_contain_text("3 asked a person")
    problems = width_findings(page) + axe_findings(page, axe_source())
    assert problems == [], "\n".join(problems)

    reach.get_by_role("button", name="Approve and remember path matches q/* for 15 min").click()
    expect(page.locator("#decide-feedback")).to_contain_text("you approved it")
    assert ApprovalRequest.objects.get(id=pending.id).status == ApprovalStatus.APPROVED
    assert ApprovalGrant.objects.get(agent=agent).pattern == {"path": "q/*"}
