"""Auditors and admins in Chromium at 1280 and 390 px: "what did notes-bot do with files
under notes/" is one form, with what matched counted; an impossible date is an error on
its field, never the debug page; revoking a token takes a confirmation the browser
enforces without any script."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.db import transaction

from audit_app.models import AuditEvent, AuditSubject
from audit_app.record import Actor, audit_record
from audit_app.selectors.browse import _CHOICES_CACHE_KEY as CHOICES_CACHE_KEY
from tests.browser.page_checks import axe_findings, axe_source, width_findings
from tests.browser.test_audit_pages import WIDTHS, no_sideways_scroll, open_as
from trust_app.models import AgentToken
from trust_app.services.agents import agent_create

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture(autouse=True)
def _fresh_filter_choices() -> Iterator[None]:
    """The pages' filter choices are cached for a while; the next test's log is another."""
    yield
    cache.delete(CHOICES_CACHE_KEY)


def file_call(agent: Any, tool: str, path: str) -> None:
    invocation_id = uuid.uuid4()
    for kind in ("invocation.decided", "invocation.finished"):
        with transaction.atomic():
            audit_record(
                kind=kind, actor=Actor.agent(agent), agent=agent, invocation_id=invocation_id,
                tool=tool, category="file_system", outcome="allow",
                data={"arguments": {"path": path}} if kind == "invocation.decided" else {},
            )  # fmt: skip


@pytest.mark.parametrize("width", WIDTHS)
def test_argument_search_and_filter_errors_in_the_browser(
    browser: Any, daphne_server: str, width: int
) -> None:
    bot = agent_create(name=f"notes-bot-{uuid.uuid4().hex[:6]}", access_level="standard").agent
    for path in ("notes/a.txt", "notes/a.txt", "notes/deep/b.md", "notes-old/c.txt", "x.txt"):
        file_call(bot, "read_file", path)
    page = open_as(browser, daphne_server, "auditor", width, "/audit/")

    page.fill("#filter-agent", bot.name)
    page.fill("#filter-path", "notes/")
    page.click("#audit-filters button[type=submit]")
    page.wait_for_selector("#matched")
    assert "path=notes" in page.url
    rows = page.locator("#matched tbody tr").all_inner_texts()
    assert [" ".join(r.split()) for r in rows] == [
        "path notes/a.txt 2 4",
        "path notes/deep/b.md 1 2",
    ]
    assert page.locator("#result-count").inner_text().startswith("6 ")
    shown = {int(i) for i in page.locator("tr[data-event]").evaluate_all(
        "rows => rows.map(r => r.dataset.event)")}  # fmt: skip
    # Every event of each call that named a path under notes/ (its finishing too).
    named = AuditSubject.objects.filter(kind="path", value__startswith="notes/")
    under = AuditEvent.objects.filter(
        agent_name=bot.name, invocation_id__in=named.values("invocation_id")
    )
    assert shown == set(under.values_list("id", flat=True))
    assert no_sideways_scroll(page)
    assert not axe_findings(page, axe_source())

    # An impossible date: a form error on its field, no events, no debug page.
    response = page.goto(daphne_server + "/audit/?since=2026-02-30")
    assert response is not None and response.status == 400
    assert "since: '2026-02-30' is not a real moment" in page.locator("#filter-error").inner_text()
    assert page.locator("#filter-since").get_attribute("aria-invalid") == "true"
    assert page.locator("tr[data-event]").count() == 0
    assert "Traceback" not in page.content()
    assert not width_findings(page)
    assert not axe_findings(page, axe_source())
    page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_revoking_a_token_takes_a_confirmation_without_script(
    browser: Any, daphne_server: str, width: int
) -> None:
    agent = agent_create(name=f"tok-{uuid.uuid4().hex[:6]}", access_level="standard").agent
    token = AgentToken.objects.get(agent=agent)
    page = open_as(browser, daphne_server, "admin", width, f"/agents/{agent.id}/")
    row = page.locator(f'tr[data-token="{token.public_id}"]')
    revoke = row.locator("button[data-revoke]")
    assert not revoke.is_visible()  # behind its own disclosure, not under Rotate
    row.locator("details.token-revoke summary").click()
    revoke.click()  # unticked: the browser holds the form back
    box = row.locator("input[name=confirm]")
    assert box.evaluate("box => !box.validity.valid")
    token.refresh_from_db()
    assert token.revoked_at is None
    box.check()
    revoke.click()
    page.wait_for_selector(".messages")
    assert f"Token {token.public_id} revoked." in page.locator(".messages").inner_text()
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert not width_findings(page)
    page.context.close()
