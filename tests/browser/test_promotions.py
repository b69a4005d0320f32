"""An operator approves a promotion request in Chromium; the agent's next decision uses it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings as django_settings
from playwright.sync_api import expect

from common.settings_config import config_reload
from common.testing import free_port
from tests.browser.test_approvals import PASSWORD, in_thread
from tests.browser.test_inbox_reconnect import daphne_on, operator_inbox
from tests.trust_app.test_trust_support import TERMINAL_GATED
from trust_app.models import PromotionRequest, PromotionStatus, TrustState
from trust_app.services.agents import agent_create, person_create, person_token_issue
from trust_app.services.evidence import task_outcome_report

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture
def gated_config(tmp_path: Path, settings: Any) -> Iterator[Path]:
    """This test's config, loaded here and handed to the test's own daphne."""
    original = django_settings.SYNTHORG_CONFIG  # read before the override below
    path = tmp_path / "synthorg-trust.yaml"
    path.write_text(TERMINAL_GATED)
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()
    yield path
    settings.SYNTHORG_CONFIG = original
    config_reload()


@pytest.mark.django_db(transaction=True)
def test_an_operator_approves_a_promotion_and_the_agents_next_decision_uses_it(
    test_env: dict[str, str], tmp_path: Path, browser: Any, gated_config: Path
) -> None:
    env = {**test_env, "SYNTHORG_CONFIG": str(gated_config)}
    agent = agent_create(
        name=f"agent-{uuid.uuid4().hex[:8]}", access_level="standard", autonomy="full"
    ).agent
    admin = person_create(username=f"admin-{uuid.uuid4().hex[:6]}", role="admin", password=PASSWORD)
    with (
        daphne_on(free_port(), env, tmp_path / "daphne.log") as base,
        httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {person_token_issue(person=admin)}"}
        ) as people_api,
    ):

        def explain() -> dict[str, Any]:
            answer = people_api.post(
                f"/api/v1/agents/{agent.id}/explain/",
                json={"tool": "shell_command", "arguments": {"command": "ls"}},
            )
            assert answer.status_code == 200, answer.text
            return answer.json()

        before = explain()["decision"]
        assert before["outcome"] == "deny"
        assert "earned level restricted" in before["reason"]
        page = operator_inbox(browser, base)
        report: dict[str, Any] = {
            "task_id": "t1", "difficulty": "hard", "quality": 9.0, "completed": True,
            "categories": ["terminal"],
        }  # fmt: skip
        in_thread(lambda: task_outcome_report(agent=agent, person=admin, **report))
        promotion = PromotionRequest.objects.get(agent=agent, status=PromotionStatus.PENDING)
        row = page.locator(f"#promo-{promotion.id}")
        expect(row).to_be_visible(timeout=5000)  # pushed, no reload
        expect(row.locator(".to-level")).to_have_text("standard")
        expect(page.locator("#pending-count")).to_have_text("1")
        row.locator("input[name^=reason-]").fill("clean terminal work")
        row.get_by_role("button", name="Approve").click()
        expect(page.locator("#decide-feedback")).to_contain_text("you approved it")
        expect(row.locator(".verdict")).to_have_text(f"approved by {page.username}")
        expect(page.locator("#pending-count")).to_have_text("0")
        assert TrustState.objects.get(agent=agent).levels["terminal"] == "standard"
        after = explain()["decision"]
        assert after["outcome"] == "allow", after
        assert not any(step.startswith("trust:") for step in after["trace"])
        page.context.close()
