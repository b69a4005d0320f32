"""Audit pages in Chromium at 1280 and 390 px: auditors and admins filter from the values
the log holds, are told when a filter matches nothing that exists, page newer and older,
step from event to event and verify the chain on a worker while the page shows progress;
operators see their own decisions and how the calls ended."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from approvals_app.models import ApprovalRequest
from approvals_app.services import approval_decide
from audit_app.models import AuditEvent, AuditVerification
from audit_app.record import Actor, audit_record
from audit_app.selectors.browse import audit_filter_choices
from common.testing import RunningProcess
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from trust_app.services.agents import agent_create, person_create

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
]

make_agent = api_fixtures.make_agent
PASSWORD = "pw-audit-pages"
WIDTHS = (1280, 390)


def open_as(browser: Any, base: str, role: str, width: int, next_path: str) -> Any:
    username = f"{role}-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role=role, password=PASSWORD)
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(f"{base}/accounts/login/?next={next_path}")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}{next_path}")
    return page


def no_sideways_scroll(page: Any) -> bool:
    """Nothing in the page's content reaches past the window (wide tables scroll inside
    their own region). The shared header is the page shell's and is checked with it."""
    wide = page.evaluate(
        """() => [...document.querySelectorAll('main *')]
            .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
            .filter(e => !e.closest('.table-scroll'))
            .map(e => e.tagName + '.' + e.className + '#' + e.id)"""
    )
    assert not wide, f"wider than the window: {wide[:8]}"
    return True


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("role", ["auditor", "admin"])
def test_audit_pages_filter_page_step_and_verify(
    browser: Any,
    daphne_server: str,
    celery_worker_process: RunningProcess,
    role: str,
    width: int,
    tmp_path: Path,
) -> None:
    agent = agent_create(name=f"pages-{uuid.uuid4().hex[:6]}", access_level="standard").agent
    for i in range(60):
        with transaction.atomic():
            audit_record(kind="invocation.decided", actor=Actor.agent(agent), agent=agent,
                         tool="read_file", outcome="deny" if i % 4 == 0 else "allow",
                         reason=f"call {i}")  # fmt: skip
    # The outcomes offered are kept briefly (SYNTHORG_AUDIT_FILTER_CHOICES_TTL); a page
    # of another test may have kept them just before these events were written.
    audit_filter_choices(fresh=True)
    page = open_as(browser, daphne_server, role, width, "/audit/")
    assert page.locator("#chain-last").inner_text().startswith("Not verified")
    assert no_sideways_scroll(page)

    # A select offers the outcomes the log holds; the count says how many match.
    page.select_option("select[name=outcome]", "deny")
    page.click("#audit-filters button[type=submit]")
    page.wait_for_url("**/audit/?*outcome=deny*")
    denied = AuditEvent.objects.filter(outcome="deny").count()
    page.wait_for_function(
        f"() => document.querySelector('#result-count')?.textContent.startsWith('{denied} ')"
    )
    outcomes = page.locator("#audit-results td.outcome").all_inner_texts()
    assert outcomes and set(outcomes) == {"deny"}

    # A value no event has is an error on the page, not an empty table.
    page.goto(daphne_server + "/audit/?outcome=denied")
    assert "outcome: no event has 'denied'" in page.locator("#filter-error").inner_text()
    assert page.locator("tr[data-event]").count() == 0

    # Older, then newer again: back to the same rows.
    page.goto(daphne_server + f"/audit/?agent={agent.name}&limit=20")
    first = page.locator("tr[data-event]").evaluate_all("rows => rows.map(r => r.dataset.event)")
    page.click("#next-page")
    page.wait_for_selector("#newer-page")
    page.click("#newer-page")
    page.wait_for_selector("tr[data-event]")
    again = page.locator("tr[data-event]").evaluate_all("rows => rows.map(r => r.dataset.event)")
    assert again == first

    # Verify on a worker; the panel follows the run until it reports the chain intact
    # (as long as a person would wait: the worker may be busy with the suite's load).
    page.click("#verify-chain")
    try:
        page.wait_for_function(
            "() => document.querySelector('#chain-last strong')?.textContent === 'Intact'",
            timeout=180_000,
        )
    except PlaywrightTimeoutError:
        runs = list(AuditVerification.objects.order_by("id").values())
        verified = list(AuditEvent.objects.filter(kind__startswith="audit.").values())
        raise AssertionError(
            f"the panel says {page.locator('#chain-status').inner_text()!r}; "
            f"runs {runs}; audit events {verified}"
        ) from None
    assert no_sideways_scroll(page)
    page.screenshot(path=str(tmp_path / f"audit-{role}-{width}.png"), full_page=True)

    # From one event to the next and back, with the chain's status on the event page.
    middle = AuditEvent.objects.filter(agent_name=agent.name).order_by("id")[30]
    page.goto(f"{daphne_server}/audit/{middle.id}/")
    assert page.locator("#chain-last strong").inner_text() == "Intact"
    page.click("#next-event")
    page.wait_for_url(f"**/audit/{middle.id + 1}/")
    page.click("#previous-event")
    page.wait_for_url(f"**/audit/{middle.id}/")
    assert no_sideways_scroll(page)
    page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_an_operator_sees_their_decisions_and_the_outcomes(
    browser: Any,
    daphne_server: str,
    celery_worker_process: RunningProcess,
    make_agent: Callable[..., AgentClient],
    width: int,
) -> None:
    client = make_agent(autonomy="locked")
    page = open_as(browser, daphne_server, "operator", width, "/decisions/")
    assert "You have not decided any call yet" in page.inner_text("#my-decisions")
    operator = get_user_model().objects.get(username=page.inner_text(".person-name"))
    created = client.call("test_echo", {"text": f"seen at {width} px"}, wait=0).json()
    assert created["status"] == "pending_approval", created
    request = ApprovalRequest.objects.get(invocation_id=created["id"])
    approval_decide(request=request, person=operator, decision="approve")
    assert client.get(created["id"], wait=60).json()["status"] == "succeeded"
    page.reload()
    row = page.locator("tr[data-decision]")
    assert row.count() == 1
    assert "succeeded" in row.inner_text() and f"seen at {width} px" in row.inner_text()
    assert no_sideways_scroll(page)
    # Operators have no audit log: the narrow page is theirs, /audit/ stays closed.
    assert page.goto(daphne_server + "/audit/").status == 403
    page.context.close()
