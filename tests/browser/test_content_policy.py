"""The Content-Security-Policy in Chromium: every page of every role, the admin site and the
API docs report no violation and still work (the inbox's and the dashboard's live parts,
the charts, a confirmation); a script injected into a page does not run while the
console's own files do, and the same injection runs where the policy is bypassed.

Violations are read from the page itself (a `securitypolicyviolation` listener added
before any of the page's scripts) and from the browser's console messages.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import suppress
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.templatetags.static import static
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from audit_app.record import Actor
from secrets_app.models import Secret
from secrets_app.services import secret_set
from tests.browser.test_approvals import PASSWORD, Agent, agent_factory  # noqa: F401 - fixture
from tests.browser.test_every_page import console_routes, fill, samples  # noqa: F401 - fixture
from tests.common.csp_checks import HEADER, strict_policy_problems
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]

ROLES = ("operator", "admin", "auditor")
ADMIN_PAGES = ("/admin/", "/admin/auth/user/", "/admin/auth/user/add/", "/admin/auth/group/")
# Before any script of the page: every violation the page reports is kept in the page.
RECORDER = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__violations.push(e.effectiveDirective + " blocked " + (e.blockedURI || "inline")
    + " at " + (e.sourceFile || "?") + ":" + e.lineNumber + " " + (e.sample || ""));
}, true);
"""


class Watched:
    """A signed-in page whose CSP violations are recorded across its navigations."""

    def __init__(self, browser: Any, **options: Any) -> None:
        self.context = browser.new_context(**options)
        self.context.add_init_script(RECORDER)
        self.page = self.context.new_page()
        self.reported: list[str] = []
        self.page.on("console", self._console)

    def _console(self, message: Any) -> None:
        if "Content Security Policy" in message.text:
            self.reported.append(f"console: {message.text[:300]}")

    def harvest(self, where: str) -> None:
        """Keep what the current document recorded (a navigation forgets it)."""
        try:
            found = self.page.evaluate("window.__violations || []")
        except PlaywrightError:  # the document went away meanwhile: its console still said
            found = []
        self.reported += [f"{where}: {v}" for v in found]

    def goto(self, url: str) -> Any:
        response = self.page.goto(url)
        # The page's own requests (htmx panels, the schema) have their turn.
        with suppress(PlaywrightError):
            self.page.wait_for_load_state("networkidle", timeout=10_000)
        self.harvest(url)
        return response

    def sign_in(self, base: str, username: str, login: str = "/accounts/login/") -> None:
        self.goto(base + login)
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", PASSWORD)
        with self.page.expect_navigation():
            self.page.click("[type=submit]")
        self.harvest(login + " (sent)")

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def watched(browser: Any) -> Iterator[Callable[..., Watched]]:
    made: list[Watched] = []

    def make(**options: Any) -> Watched:
        made.append(Watched(browser, **options))
        return made[-1]

    yield make
    for each in made:
        each.close()


def person(role: str) -> str:
    username = f"{role}-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role=role, password=PASSWORD)
    return username


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
def test_every_page_carries_the_policy_and_reports_no_violation(
    role: str,
    daphne_server: str,
    watched: Callable[..., Watched],
    samples: dict[str, str],  # noqa: F811 - the fixture imported above
) -> None:
    tab = watched()
    tab.sign_in(daphne_server, person(role))
    assert tab.page.url == daphne_server + "/", tab.page.url
    loose: dict[str, list[str]] = {}
    visited = []
    for path in [fill(route, samples) for route in console_routes()] + ["/no/such/page/"]:
        answer = tab.page.request.get(daphne_server + path, max_redirects=0)
        if "text/html" not in answer.headers.get("content-type", ""):
            continue  # an export or a document: not a page
        if 300 <= answer.status < 400 or "<html" not in answer.text()[:500].lower():
            continue  # a redirect to a page visited anyway, or an htmx fragment
        response = tab.goto(daphne_server + path)
        visited.append(f"{path} {response.status}")
        problems = strict_policy_problems(response.headers.get(HEADER.lower()))
        if problems:
            loose[path] = problems
    assert len(visited) >= 5, visited  # the sweep reached the console's pages
    assert not loose, loose
    assert not tab.reported, "\n".join(tab.reported)


@pytest.mark.django_db(transaction=True)
def test_the_dashboard_and_the_inbox_work_live_under_the_policy(
    daphne_server: str,
    watched: Callable[..., Watched],
    agent_factory: Callable[..., Agent],  # noqa: F811 - the fixture imported above
) -> None:
    username = person("operator")
    board = watched()
    board.sign_in(daphne_server, username)
    page = board.page
    # The charts are drawn by the dashboard's script (a file now, not inline).
    drawn = (
        "() => !!(window.Chart && Chart.getChart('chart-calls') && Chart.getChart('chart-denials'))"
    )
    page.wait_for_function(drawn, timeout=10_000)
    expect(page.locator("#pending-approvals")).to_have_text("0")
    # Only the dashboard's script turns a socket message into this event.
    page.evaluate(
        "() => document.body.addEventListener('inbox-changed', () => { window.__heard = true; })"
    )
    inbox = watched()
    inbox.sign_in(daphne_server, username)
    inbox.goto(daphne_server + "/approvals/")
    expect(inbox.page.locator("body[data-live=open]")).to_have_count(1, timeout=10_000)
    invocation = agent_factory().call("test_echo", {"text": "under the policy"})
    row = inbox.page.locator(f"#req-{invocation['approval']['id']}")
    expect(row).to_be_visible(timeout=10_000)  # pushed over the socket, no reload
    # The dashboard hears the same push and reads its figure again (its script's listener).
    expect(page.locator("#pending-count")).to_have_text("1", timeout=10_000)
    page.wait_for_function("() => window.__heard === true", timeout=10_000)
    expect(page.locator("#pending-approvals")).to_have_text("1", timeout=20_000)
    page.wait_for_function(drawn, timeout=10_000)  # still drawn after the panel's swap
    row.get_by_role("button", name="Deny").click()
    expect(inbox.page.locator("#decide-feedback")).to_contain_text("needs a reason")
    for tab, where in ((board, "dashboard"), (inbox, "inbox")):
        tab.harvest(where)
    assert not board.reported + inbox.reported, "\n".join(board.reported + inbox.reported)


@pytest.mark.django_db(transaction=True)
def test_a_revoke_asks_first_without_an_inline_handler(
    daphne_server: str, watched: Callable[..., Watched]
) -> None:
    name = f"CSP_SECRET_{uuid.uuid4().hex[:6].upper()}"
    secret_set(name=name, value="csp-value-0123456789", actor=Actor.system("suite"))
    tab = watched()
    tab.sign_in(daphne_server, person("admin"))
    tab.goto(daphne_server + "/secrets/")
    revoke = tab.page.locator(f"#secret-{name} form[data-confirm] button")
    asked: list[str] = []

    def answer(accept: bool) -> Callable[[Any], None]:
        def reply(dialog: Any) -> None:
            asked.append(dialog.message)
            dialog.accept() if accept else dialog.dismiss()

        return reply

    tab.page.once("dialog", answer(False))
    revoke.click()
    tab.page.wait_for_function("() => true")  # the dialog was answered within the click
    assert asked and name in asked[0], asked
    expect(revoke).to_be_visible()  # still the same page: the form was not sent
    assert Secret.objects.get(name=name).revoked_at is None  # declined: nothing sent
    tab.page.once("dialog", answer(True))
    with tab.page.expect_navigation():
        revoke.click()
    assert len(asked) == 2
    assert Secret.objects.get(name=name).revoked_at is not None  # control: confirmed, revoked
    tab.harvest("/secrets/")
    assert not tab.reported, "\n".join(tab.reported)


@pytest.mark.django_db(transaction=True)
def test_the_admin_site_and_the_api_docs_report_no_violation(
    daphne_server: str, watched: Callable[..., Watched]
) -> None:
    username = f"root-{uuid.uuid4().hex[:6]}"
    get_user_model().objects.create_superuser(username, password=PASSWORD)
    tab = watched()
    tab.sign_in(daphne_server, username, login="/admin/login/")
    for path in ADMIN_PAGES:
        response = tab.goto(daphne_server + path)
        assert response.status == 200, (path, response.status)
        assert not strict_policy_problems(response.headers.get(HEADER.lower())), path
    # The admin's own scripts still run: the user list's action bar counts a selection.
    tab.goto(daphne_server + "/admin/auth/user/")
    tab.page.locator("input.action-select").first.check()
    expect(tab.page.locator(".action-counter")).to_contain_text("1 of")
    docs = tab.goto(daphne_server + "/api/docs/")
    assert not strict_policy_problems(docs.headers.get(HEADER.lower()))
    # Swagger UI started (its start-up script is a file) and read the schema.
    expect(tab.page.locator(".swagger-ui .info .title")).to_contain_text("SynthOrg", timeout=20_000)
    tab.harvest("/api/docs/")
    assert not tab.reported, "\n".join(tab.reported)


INJECT = """(ownScript) => new Promise((resolve) => {
  let waiting = 2;
  const done = () => { if (--waiting === 0) {
    resolve({
      inline: window.__injectedInline === true,
      handler: window.__injectedHandler === true,
      styled: document.getElementById("injected-box").getBoundingClientRect().width === 123,
      own: typeof window.Chart === "function",
    });
  } };
  const box = document.createElement("div");
  box.id = "injected-box";
  box.setAttribute("style", "width: 123px; display: block");
  document.body.appendChild(box);
  const inline = document.createElement("script");
  inline.textContent = "window.__injectedInline = true;";
  document.body.appendChild(inline);
  const img = document.createElement("img");
  img.setAttribute("onerror", "window.__injectedHandler = true");
  img.addEventListener("error", () => setTimeout(done, 0));
  img.src = "/static/no-such-image.png";
  document.body.appendChild(img);
  const own = document.createElement("script");
  own.src = ownScript;
  own.addEventListener("load", done);
  own.addEventListener("error", done);
  document.body.appendChild(own);
})"""


@pytest.mark.django_db(transaction=True)
def test_an_injected_inline_script_does_not_run_while_the_consoles_own_does(
    daphne_server: str, watched: Callable[..., Watched]
) -> None:
    username = person("auditor")
    own_script = static("vendor/chartjs/chart-4.6.1.umd.min.js")
    ran = {}
    for policy, options in (("enforced", {}), ("bypassed", {"bypass_csp": True})):
        tab = watched(**options)
        tab.sign_in(daphne_server, username)
        tab.goto(daphne_server + "/tools/")  # a page without the chart script
        assert tab.page.evaluate("typeof window.Chart") == "undefined"
        ran[policy] = tab.page.evaluate(INJECT, own_script)
        tab.harvest(f"/tools/ ({policy})")
        ran[policy]["reported"] = list(tab.reported)
    enforced, bypassed = ran["enforced"], ran["bypassed"]
    # The attack: an inline script, an inline handler and a style attribute, all refused...
    assert not enforced["inline"] and not enforced["handler"] and not enforced["styled"], ran
    # ...while a script from the console itself runs on the same page.
    assert enforced["own"], ran
    said = " ".join(enforced["reported"])
    for directive in ("script-src-elem", "script-src-attr", "style-src-attr"):
        assert directive in said, (directive, enforced["reported"])
    # Control: the same injection runs where the browser ignores the policy.
    assert bypassed["inline"] and bypassed["handler"] and bypassed["styled"], ran
    assert bypassed["own"] and not [r for r in bypassed["reported"] if "blocked" in r], ran
