"""The inbox survives a dropped socket and resyncs from the database when it reconnects."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from approvals_app.models import ApprovalRequest, ApprovalStatus
from approvals_app.services import approval_decide
from common.testing import free_port, http_status, python_argv, running, wait_until
from tests.browser.page_checks import HEIGHT, WIDTHS
from tests.browser.test_approvals import PASSWORD, Agent, in_thread
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]

# Counts the page's socket openings and keeps the latest socket, so a test can close it.
WATCH_SOCKETS = """
document.addEventListener("htmx:wsOpen", function (e) {
  window.inboxOpens = (window.inboxOpens || 0) + 1;
  window.inboxSocket = e.detail.event.target;
});
"""


@contextmanager
def daphne_on(port: int, env: dict[str, str], log: Path) -> Iterator[str]:
    """A daphne of the page's own on ``port``, stopped when the block ends."""
    url = f"http://127.0.0.1:{port}"
    argv = python_argv("-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                       "synthorg_site.asgi:application")  # fmt: skip
    with running(argv, env=env, log_path=log) as server:

        def up() -> bool:
            if server.process.poll() is not None:
                raise AssertionError(f"daphne exited:\n{server.output()[-4000:]}")
            return http_status(url + "/healthz") in (200, 503)

        wait_until(up, timeout=60, what="the page's daphne to answer")
        yield url


def operator_inbox(browser: Any, base: str, width: int = WIDTHS["wide"]) -> Any:
    username = f"operator-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role="operator", password=PASSWORD)
    context = browser.new_context(viewport={"width": width, "height": HEIGHT})
    context.add_init_script(WATCH_SOCKETS)
    page = context.new_page()
    page.goto(base + "/accounts/login/?next=/approvals/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(base + "/approvals/")
    expect(page.locator("body[data-live=open]")).to_have_count(1, timeout=10_000)
    page.username = username
    return page


def pending_count() -> str:
    return str(ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING).count())


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_after_the_server_restarts_the_inbox_shows_what_changed_meanwhile(
    width: str,
    daphne_server: str,
    test_env: dict[str, str],
    tmp_path: Path,
    browser: Any,
) -> None:
    port = free_port()
    agent = Agent(daphne_server)  # the agent's calls go to the other server, which stays up
    decider = person_create(
        username=f"admin-{uuid.uuid4().hex[:6]}", role="admin", password=PASSWORD
    )
    with daphne_on(port, test_env, tmp_path / "daphne-1.log") as base:
        page = operator_inbox(browser, base, WIDTHS[width])
        decided_meanwhile = agent.call("test_echo", {"text": "decided while away"})
        row_decided = page.locator(f"#req-{decided_meanwhile['approval']['id']}")
        expect(row_decided).to_be_visible(timeout=5000)
        # Positive control: while connected, no banner, deciding on, the countdown counts.
        banner = page.locator("#connection-state")
        expect(banner).to_be_hidden()
        expect(row_decided.locator("button.approve")).to_be_enabled()
        expect(row_decided.locator(".countdown")).to_have_text(re.compile(r"^in \d+ (min|h)"))
    # The page's server is gone: the socket dropped, the page stays.
    expect(page.locator("body[data-live=closed]")).to_have_count(1, timeout=10_000)
    # The page says so, claims no time left, and will not decide on what it cannot see.
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("Connection lost: reconnecting")
    expect(row_decided.locator("button.approve")).to_be_disabled()
    expect(row_decided.locator("button.deny")).to_be_disabled()
    expect(page.locator(".toolbar button.approve")).to_be_disabled()
    expect(row_decided.locator(".countdown")).to_have_text("paused: reconnecting")
    page.keyboard.press("j")
    page.keyboard.press("a")  # the keyboard cannot decide either
    created_meanwhile = agent.call("test_echo", {"text": "asked while away"})
    in_thread(
        lambda: approval_decide(
            request=decided_meanwhile["approval"]["id"],
            person=decider,
            decision="deny",
            reason="not now",
        )
    )
    row_created = page.locator(f"#req-{created_meanwhile['approval']['id']}")
    expect(row_created).to_have_count(0)  # nothing reached the page while it was away
    expect(row_decided.locator("button.approve")).to_have_count(1)

    with daphne_on(port, test_env, tmp_path / "daphne-2.log"):
        # The page reconnects by itself, says what it shows, and the server sends what
        # differs: the new request, and the one decided meanwhile as decided (it fades
        # like a request decided while connected).
        expect(row_created).to_be_visible(timeout=30_000)
        expect(row_decided).to_contain_text("denied by")
        expect(row_decided.locator("button.approve")).to_have_count(0)
        expect(row_decided).to_have_count(0, timeout=15_000)
        expect(page.locator("body[data-live=open]")).to_have_count(1)
        expect(page.locator("body[data-sync=synced]")).to_have_count(1)
        expect(banner).to_be_hidden()
        expect(row_created.locator("button.approve")).to_be_enabled()
        expect(row_created.locator(".countdown")).to_have_text(re.compile(r"^in \d+ (min|h)"))
        expect(page.locator("#pending-count")).to_have_text(pending_count())
        assert pending_count() == "1"
        # And it is live again: a new call appears without a reload.
        after = agent.call("test_echo", {"text": "asked after the restart"})
        expect(page.locator(f"#req-{after['approval']['id']}")).to_be_visible(timeout=5000)
        expect(page.locator("#pending-count")).to_have_text("2")
        page.context.close()
    agent.http.close()


@pytest.mark.django_db(transaction=True)
def test_a_socket_closed_from_the_page_reconnects_and_resyncs(
    daphne_server: str, browser: Any, agent_factory: Callable[..., Agent]
) -> None:
    page = operator_inbox(browser, daphne_server)
    agent = agent_factory()
    kept, settled = (agent.call("test_echo", {"text": t}) for t in ("kept", "settled quietly"))
    for invocation in (kept, settled):
        expect(page.locator(f"#req-{invocation['approval']['id']}")).to_be_visible(timeout=5000)
    # A change no push announces: only a resync from the database can show it.
    ApprovalRequest.objects.filter(id=settled["approval"]["id"]).update(
        status=ApprovalStatus.CANCELLED, decided_by="a script"
    )
    expect(page.locator(f"#req-{settled['approval']['id']}")).to_have_count(1)
    assert page.evaluate("window.inboxOpens") == 1
    page.evaluate("window.inboxSocket.close()")
    wait_until(
        lambda: page.evaluate("window.inboxOpens") == 2,
        timeout=20,
        what="the inbox to reconnect",
    )
    expect(page.locator(f"#req-{settled['approval']['id']}")).to_have_count(0, timeout=10_000)
    expect(page.locator(f"#req-{kept['approval']['id']}")).to_be_visible()
    expect(page.locator("#pending-count")).to_have_text("1")
    page.context.close()


@pytest.fixture
def agent_factory(daphne_server: str) -> Iterator[Callable[..., Agent]]:
    made: list[Agent] = []

    def make(autonomy: str = "locked") -> Agent:
        made.append(Agent(daphne_server, autonomy))
        return made[-1]

    yield make
    for agent in made:
        agent.http.close()
