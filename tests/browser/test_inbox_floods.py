"""The inbox under a flood, in Chromium at 1280 and 390 px: a thousand pending open on one
screen with the rest on demand, go in one decision that sends only their ids (each
decided once and audited), alike requests are one group opened, joined live, selected
and decided as one; axe-core clean in each state."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from playwright.sync_api import expect

from approvals_app.models import ApprovalDecision, ApprovalRequest, ApprovalStatus
from audit_app.models import AuditEvent
from tests.browser.page_checks import WIDTHS, axe_findings, axe_source, width_findings
from tests.browser.test_approvals import in_thread
from tests.browser.test_inbox_errors import inbox_for
from tests.support.pending import pending_like, submitted
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]
FIRST_SCREEN = 20  # approvals_app.selectors.inbox's default PAGE_ENTRIES


def locked_agent(prefix: str) -> Any:
    return agent_create(
        name=f"{prefix}-{uuid.uuid4().hex[:6]}",
        access_level="standard",
        autonomy="locked",
    ).agent


def writes(agent: Any, count: int, path: Callable[[int], str]) -> list[str]:
    """``count`` pending writes of ``agent`` to ``path(n)``: one through the pipeline, the
    rest recorded alike in bulk."""

    def make() -> list[str]:
        first = submitted(agent, "write_file", {"path": path(0), "content": "x\n"})
        rest = pending_like(first, count - 1, lambda n: {"path": path(n + 1), "content": "y\n"})
        return [str(first.id), *rest]

    made: list[str] = in_thread(make)
    return made


def clean(page: Any, source: str) -> None:
    problems = width_findings(page) + axe_findings(page, source)
    assert not problems, "\n".join(problems)


def decide_posts(page: Any) -> list[dict[str, list[str]]]:
    """The form of every decision the page sends, as parsed fields."""
    posts: list[dict[str, list[str]]] = []
    page.on(
        "request",
        lambda r: (
            posts.append(parse_qs(r.post_data or "", keep_blank_values=True))
            if r.method == "POST" and r.url.endswith("/approvals/decide/")
            else None
        ),
    )
    return posts


def decided_once_and_audited(ids: list[str], status: str, kind: str) -> None:
    assert ApprovalRequest.objects.filter(id__in=ids, status=status).count() == len(ids)
    assert ApprovalDecision.objects.filter(request__id__in=ids).count() == len(ids)
    assert AuditEvent.objects.filter(kind=kind, data__approval__in=ids).count() == len(ids)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_a_thousand_pending_open_on_one_screen_and_go_in_one_decision(
    width: str, daphne_server: str, browser: Any, tmp_path: Path
) -> None:
    source = axe_source()
    many, few = locked_agent("flood"), locked_agent("other")
    # Each in a folder of its own: nothing to group, so the inbox must page them.
    theirs = writes(many, 750, lambda n: f"q{n}/notes.txt")
    others = writes(few, 250, lambda n: f"o{n}/notes.txt")
    page = inbox_for(browser, daphne_server, "operator", width)
    posts = decide_posts(page)
    cards = page.locator(".inbox .risk-group .approval")
    expect(cards).to_have_count(FIRST_SCREEN)  # the first screen, not a thousand cards
    expect(page.locator("#pending-count")).to_have_text("1000")
    tier = ApprovalRequest.objects.get(id=theirs[0]).risk_tier
    expect(page.locator(f"#waiting-{tier}")).to_have_text("1000 waiting")
    assert page.evaluate("document.querySelectorAll('*').length") < 5000
    clean(page, source)
    page.screenshot(path=str(tmp_path / f"inbox-1000-{width}.png"), full_page=True)

    # The rest on demand: the next screen, and the focus on the first of it.
    page.get_by_role("button", name=f"Show more {tier}-risk requests").click()
    expect(cards).to_have_count(2 * FIRST_SCREEN)
    expect(cards.nth(FIRST_SCREEN)).to_be_focused()
    clean(page, source)

    if width == "wide":
        # Everything waiting, in one action; only the ids leave the page.
        page.get_by_label("Select all waiting").check()
        expect(page.locator("#selected-count")).to_contain_text("1,000 selected")
        chosen, decision = theirs + others, "deny"
    else:
        # One agent's requests; the other agent's stay (the control).
        page.locator("#select-by").select_option(label=f"{few.name}'s requests")
        page.get_by_role("button", name="Add to selection").click()
        expect(page.locator("#selected-count")).to_contain_text("250 selected")
        chosen, decision = others, "deny"
    page.get_by_label("reason for the selected").fill("a flood, not asked for")
    page.get_by_role("button", name="Deny selected").click()
    feedback = page.locator("#decide-feedback")
    expect(feedback).to_contain_text(f"you denied {len(chosen):,} requests", timeout=120_000)
    expect(feedback.locator("li.refused")).to_have_count(0)
    (form,) = posts
    assert set(form) == {"decision", "reason", "ids"} and form["decision"] == [decision]
    assert sorted(form["ids"][0].split()) == sorted(chosen)  # one field, nothing else
    decided_once_and_audited(chosen, ApprovalStatus.DENIED, "approval.denied")
    left = 1000 - len(chosen)
    expect(page.locator("#pending-count")).to_have_text(str(left), timeout=60_000)
    expect(page.locator(f"#waiting-{tier}")).to_have_text(
        f"{left} waiting" if left else "nothing waiting"
    )
    assert ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING).count() == left
    expect(page.locator("#selected-count")).to_have_text("none selected")
    page.context.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_alike_requests_are_one_group_opened_joined_live_and_decided_as_one(
    width: str, daphne_server: str, browser: Any, tmp_path: Path
) -> None:
    source = axe_source()
    builder, neighbour = locked_agent("build-bot"), locked_agent("docs-bot")
    alike = writes(builder, 12, lambda n: f"q/{n}.txt")
    elsewhere = writes(builder, 1, lambda n: "docs/readme.txt")
    theirs = writes(neighbour, 1, lambda n: "q/theirs.txt")
    page = inbox_for(browser, daphne_server, "operator", width)
    posts = decide_posts(page)
    group = page.locator(".inbox .group")
    expect(group).to_have_count(1)
    expect(group.locator(".group-name")).to_have_text(
        re.compile(rf"^{builder.name}: write_file ×12 under q/$")
    )
    expect(group.locator(".approval")).to_have_count(1)  # its first card, the others counted
    expect(page.locator(".inbox .risk-group .approval")).to_have_count(3)
    clean(page, source)
    page.screenshot(path=str(tmp_path / f"inbox-group-{width}.png"), full_page=True)

    # Opened: the others, on demand.
    group.get_by_role("button", name="Show more of this group").click()
    expect(group.locator(".approval")).to_have_count(12)
    expect(group.get_by_role("button", name="Show more of this group")).to_have_count(0)
    # A new alike request joins the group live: counted and shown in it, not as a card apart.
    late = in_thread(
        lambda: submitted(builder, "write_file", {"path": "q/late.txt", "content": "z"})
    )
    expect(page.locator(f"#req-{late.id}")).to_be_visible()
    expect(group.locator(f"#req-{late.id}")).to_have_count(1)
    expect(group.locator(".group-name")).to_contain_text("×13")
    clean(page, source)

    # Selected as one: every member's box follows, and the count says so.
    group.get_by_role("checkbox", name=re.compile(r"^select all of")).check()
    expect(page.locator("#selected-count")).to_have_text("13 selected")
    expect(group.locator(".approval input[name=ids]:checked")).to_have_count(13)
    # Decided as one.
    group.get_by_role("button", name="Approve all 13").click()
    expect(page.locator("#decide-feedback")).to_contain_text("you approved 13 requests")
    (form,) = posts
    assert set(form) == {"decision", "reason", "ids"}
    assert sorted(form["ids"][0].split()) == sorted([*alike, str(late.id)])
    decided_once_and_audited([*alike, str(late.id)], ApprovalStatus.APPROVED, "approval.approved")
    expect(group).to_have_count(0)  # nothing left in it: it goes
    assert page.evaluate("document.activeElement !== document.body")  # the focus stays put
    # The control: what was not alike was not decided.
    for request_id in (*elsewhere, *theirs):
        assert ApprovalRequest.objects.get(id=request_id).status == ApprovalStatus.PENDING
    expect(page.locator("#pending-count")).to_have_text("2")
    page.context.close()
