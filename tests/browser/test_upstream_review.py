"""An admin reviews a rug pull in a real browser: the inbox says it, the page shows the change."""

from __future__ import annotations

from typing import Any

import pytest

from audit_app.models import AuditEvent
from tests.browser.test_admin_agents import PASSWORD, sign_in
from tests.tools_app.bridge.upstream import listings
from tools_app.bridge.pinning import definitions_review, upstream_standing
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.mark.django_db(transaction=True)
def test_admin_finds_the_held_tool_from_the_inbox_and_rejects_the_change(
    daphne_server: str, page: Any
) -> None:
    first, second = listings("notes", "rug_pull", times=2)
    definitions_review(server="notes", tools=first)
    assert not definitions_review(server="notes", tools=second)["notes__add_note"].available

    person_create(username="ada", role="admin", password=PASSWORD)
    sign_in(page, daphne_server, "ada")
    page.goto(daphne_server + "/approvals/")
    banner = page.locator(".upstream-held-banner")
    assert "1 upstream tool held" in banner.inner_text()
    banner.locator("a").click()
    page.wait_for_url(daphne_server + "/tools/upstream/")

    section = page.locator('[data-pin="notes__add_note"]')
    assert section.get_attribute("data-status") == "held"
    added = section.locator(".diff .added").all_inner_texts()
    removed = section.locator(".diff .removed").all_inner_texts()
    assert any("<IMPORTANT>" in line for line in added)
    assert any('Add a note with the given text."' in line for line in removed)
    assert "concealment" in section.locator(".findings").inner_text()

    # Accepting a flagged definition is not one click: the box naming its findings must
    # be ticked first, and the browser holds the form back until it is (no script needed).
    box = section.locator("input[name=accept_findings]")
    assert "concealment" in section.locator("label.confirm-findings").inner_text()
    section.locator("button[value=accept]").click()
    assert box.evaluate("box => !box.validity.valid")
    assert page.url == daphne_server + "/tools/upstream/"
    assert not AuditEvent.objects.filter(kind="bridge.definition.accepted").exists()

    # Ticked, a decision without a reason: told beside the form, nothing decided.
    box.check()
    section.locator("button[value=accept]").click()
    alert = page.locator('[data-pin="notes__add_note"] [role=alert]')
    assert "reason: say why" in alert.inner_text()
    assert not upstream_standing("notes__add_note").available

    page.locator('[data-pin="notes__add_note"] input[name=reason]').fill("reads ssh keys")
    page.locator('[data-pin="notes__add_note"] button[value=reject]').click()
    page.wait_for_selector(".messages")
    assert "rejected" in page.locator(".messages").inner_text()
    assert page.locator('[data-pin="notes__add_note"]').get_attribute("data-status") == "rejected"
    event = AuditEvent.objects.get(kind="bridge.definition.rejected")
    assert (event.actor_name, event.reason) == ("ada", "reads ssh keys")
    assert upstream_standing("notes__add_note").status == "rejected"
