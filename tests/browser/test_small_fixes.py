"""In Chromium at 1280 and 390 px: a new token is shown once (a reload shows it no more and
issues none), a tool an admin disables says who disabled it and why, and the dashboard's
inbox figure agrees with the badge."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from approvals_app.events import publish_approval_change
from audit_app.record import Actor
from common.inbox import ApprovalChange, InboxKind
from tools_app.models import ToolDefinition
from tools_app.services.tool_registry import tool_enabled_set, tool_registry_sync
from trust_app.models import AgentToken, PromotionRequest
from trust_app.services.agents import agent_create, person_create
from trust_app.tokens.bearer import token_digest

pytestmark = [pytest.mark.browser, pytest.mark.integration]
PASSWORD = "pw-browser-small-1"
TOOL = "extract_links"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", (1280, 390))
def test_token_shown_once_disabled_tool_who_and_why_and_inbox_counts_agree(
    daphne_server: str, browser: Any, tmp_path: Path, width: int
) -> None:
    base = daphne_server
    username = f"admin-{uuid.uuid4().hex[:6]}"
    admin = person_create(username=username, role="admin", password=PASSWORD)
    agent = agent_create(name=f"small-{uuid.uuid4().hex[:8]}", access_level="standard").agent
    tool_registry_sync()  # the registry rows, whatever an earlier test left in the table
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{base}/accounts/login/?next=/agents/{agent.id}/")
        page.fill("#id_username", username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/agents/{agent.id}/")

        # Positive control: the form's POST leads to the one page that shows the token.
        page.locator("#tokens input[name=label]").fill("from the browser")
        page.click("#create-token")
        page.wait_for_url(f"{base}/agents/{agent.id}/tokens/new/")
        plaintext = page.locator("#new-token").inner_text().strip()
        assert AgentToken.objects.get(digest=token_digest(plaintext)).agent_id == agent.id
        issued = AgentToken.objects.filter(agent=agent).count()
        page.screenshot(path=str(tmp_path / f"token-shown-{width}.png"), full_page=True)
        # Attack on a second token: the reload repeats the GET; nothing shown, none issued.
        page.reload()
        expect(page.locator("#token-gone")).to_be_visible()
        expect(page.locator("#new-token")).to_have_count(0)
        assert plaintext not in page.content()
        assert AgentToken.objects.filter(agent=agent).count() == issued
        page.screenshot(path=str(tmp_path / f"token-gone-{width}.png"), full_page=True)

        page.goto(f"{base}/tools/")
        row = page.locator(f'tr[data-tool="{TOOL}"]')
        row.locator("summary").filter(has_text="Disable…").click()
        disable = row.get_by_role("button", name=f"Disable {TOOL}")
        reason = row.locator("input[name=reason]")
        # A disable without a reason is stopped before it leaves the page...
        disable.click()
        assert reason.evaluate("el => !el.validity.valid")
        assert ToolDefinition.objects.get(name=TOOL).enabled is True
        # ...and with one, the row tells everyone who disabled the tool and why.
        reason.fill("links to a leaked host")
        disable.click()
        who = page.locator(f'tr[data-tool="{TOOL}"] .disabled-by')
        expect(who).to_contain_text(f"by {username}")
        expect(who).to_contain_text("links to a leaked host")
        expect(page.locator(f'tr[data-tool="{TOOL}"] td.tool-state')).to_contain_text("disabled")
        page.locator(f'tr[data-tool="{TOOL}"]').screenshot(
            path=str(tmp_path / f"tool-disabled-{width}.png")
        )

        # The dashboard's inbox figure and the badge agree, and stay so when a promotion
        # request arrives over the socket (counted by both).
        page.goto(f"{base}/")
        badge, figure = page.locator("#pending-count"), page.locator("#pending-approvals")
        before = int(badge.inner_text())
        expect(figure).to_have_text(str(before))
        promotion = PromotionRequest.objects.create(
            agent=agent, track="web", from_level="standard", to_level="elevated",
            created_at=timezone.now(),
        )  # fmt: skip
        publish_approval_change(promotion.id, ApprovalChange.NEW, InboxKind.PROMOTION)
        expect(badge).to_have_text(str(before + 1))
        expect(figure).to_have_text(str(before + 1))
        page.screenshot(path=str(tmp_path / f"dashboard-{width}.png"), full_page=True)
    finally:
        context.close()
        tool_enabled_set(name=TOOL, enabled=True, actor=Actor.person(admin), reason="test over")
