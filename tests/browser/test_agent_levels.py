"""An admin sees the level that applies, follows the agent page to its trust page, reads the
chart (axes, values, a table) and is asked to confirm a reset, in Chromium at 1280 and 390 px."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.utils import timezone
from playwright.sync_api import expect

from common.settings_config import config_reload
from common.testing import free_port
from tests.browser.test_inbox_reconnect import daphne_on
from trust_app.models import TrustChange, TrustScoreSample
from trust_app.services.agents import agent_create, person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]
PASSWORD = "pw-browser-levels-1"
WEIGHTED_FROM_SANDBOXED = "trust:\n  strategy: weighted\n  initial_level: sandboxed\n"


@pytest.fixture
def weighted_config(tmp_path: Path, settings: Any) -> Iterator[Path]:
    """Trust that starts every agent at sandboxed, here and in the test's own daphne."""
    original = django_settings.SYNTHORG_CONFIG  # read before the override below
    path = tmp_path / "synthorg-weighted.yaml"
    path.write_text(WEIGHTED_FROM_SANDBOXED)
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()
    yield path
    settings.SYNTHORG_CONFIG = original
    config_reload()


def sign_in(browser: Any, base: str, width: int) -> Any:
    username = f"admin-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role="admin", password=PASSWORD)
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(base + "/accounts/login/?next=/agents/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(base + "/agents/")
    return page


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", (1280, 390))
def test_admin_sees_the_level_trust_holds_reads_the_chart_and_confirms_a_reset(
    test_env: dict[str, str], tmp_path: Path, browser: Any, weighted_config: Path, width: int
) -> None:
    agent = agent_create(name=f"held-{uuid.uuid4().hex[:8]}", access_level="elevated").agent
    now = timezone.now()
    for minutes, score in ((0, 0.1), (20, 0.3), (40, 0.45)):
        TrustScoreSample.objects.create(
            agent=agent, at=now - timedelta(minutes=60 - minutes), score=score
        )
    env = {**test_env, "SYNTHORG_CONFIG": str(weighted_config)}
    with daphne_on(free_port(), env, tmp_path / "daphne.log") as base:
        page = sign_in(browser, base, width)
        row = page.locator(f'tr[data-agent="{agent.name}"]')
        expect(row.locator("td.effective-level strong")).to_have_text("sandboxed")
        expect(row.locator("td.admin-level")).to_have_text("elevated")
        page.screenshot(path=str(tmp_path / f"agents-{width}.png"), full_page=True)

        row.get_by_role("link", name=agent.name).click()
        effective = page.locator("#effective-level")
        expect(effective.locator("strong")).to_have_text("sandboxed")
        expect(effective).to_contain_text("below the admin's elevated")
        expect(page.locator("#access-level")).to_have_text("elevated")
        page.screenshot(path=str(tmp_path / f"agent-{width}.png"), full_page=True)

        page.locator("#trust-link").click()
        page.wait_for_url(f"{base}/agents/{agent.id}/trust/")
        chart = page.locator("svg.trust-chart")
        expect(chart).to_be_visible()
        expect(chart.locator(".y-axis text")).to_have_text(
            ["0.00", "0.25", "0.50", "0.75", "1.00", "score"]
        )
        expect(chart.locator(".x-axis .axis-title")).to_have_text("time (UTC)")
        expect(chart.locator("circle")).to_have_count(3)
        expect(chart.locator("text.value")).to_have_text("0.45")
        box = chart.bounding_box()
        assert box is not None and box["x"] + box["width"] <= width
        page.locator(".trust-chart-data summary").click()
        expect(page.locator("#score-table tbody tr")).to_have_count(3)
        expect(page.locator("#score-table tbody tr").last.locator("td").last).to_have_text("0.450")
        page.screenshot(path=str(tmp_path / f"trust-{width}.png"), full_page=True)

        # Attack on the careless click: a reason alone does not reset...
        form = page.locator("#trust-reset")
        form.locator("input[name=reason]").fill("new job")
        form.get_by_role("button", name="Reset trust").click()
        assert form.locator("input[name=confirm]").evaluate("el => !el.validity.valid")
        assert not TrustChange.objects.filter(agent=agent, kind="reset").exists()
        # ...positive control: confirming resets, and the page says so in its history.
        form.locator("input[name=confirm]").check()
        form.get_by_role("button", name="Reset trust").click()
        expect(page.locator(".trust-history")).to_contain_text("new job")
        assert TrustChange.objects.filter(agent=agent, kind="reset").count() == 1
        page.context.close()
