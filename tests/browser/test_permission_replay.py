"""An admin previews a change on an agent's page in Chromium at 1280 and 390 px and reads
what it would have done to the agent's calls of the last days: the counts, an example
linking to its call, nothing sideways, axe-core clean."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from common.testing import RunningProcess
from tests.browser.page_checks import axe_findings, axe_source, width_findings
from tests.browser.test_audit_pages import WIDTHS, no_sideways_scroll, open_as
from tests.trust_app.services.test_permissions_replay import History
from tests.trust_app.services.test_permissions_replay import history as history  # fixture

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
]


@pytest.mark.parametrize("width", WIDTHS)
def test_the_preview_replays_the_agents_week_in_the_browser(
    browser: Any,
    daphne_server: str,
    celery_worker_process: RunningProcess,
    history: History,
    tmp_path: Path,
    width: int,
) -> None:
    page = open_as(browser, daphne_server, "admin", width, f"/agents/{history.agent.id}/")
    page.fill("#id_denied", "test_sleep\ntest_echo")
    page.click("#preview")
    replay = page.locator("#replay")
    expect(replay).to_be_visible(timeout=15_000)
    expect(replay.locator("#replay-scope")).to_contain_text("4 calls of " + history.agent.name)
    refused = replay.locator('li[data-change="refused"]')
    expect(refused.locator(".count").first).to_have_text("2")
    expect(refused.locator(".examples li")).to_have_count(2)
    expect(refused.locator(".examples li").first).to_contain_text("test_echo")
    for change in ("reachable", "stops_asking", "starts_asking"):
        expect(replay.locator(f'li[data-change="{change}"] > .count')).to_have_text("0")
    page.screenshot(path=str(tmp_path / f"replay-{width}.png"), full_page=True)
    assert not axe_findings(page, axe_source())
    assert not width_findings(page)
    assert no_sideways_scroll(page)

    # The example leads to the call's own story in the audit.
    refused.locator(".examples a").first.click()
    page.wait_for_url(f"{daphne_server}/audit/invocations/**")
    expect(page.locator("main")).to_contain_text("test_echo")

    # Control: previewing the settings as they are counts nothing.
    page.goto(f"{daphne_server}/agents/{history.agent.id}/")
    page.click("#preview")
    expect(page.locator('#replay li[data-change="refused"] > .count')).to_have_text("0")
    page.context.close()
