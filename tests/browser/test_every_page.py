"""Every console page, for every role, at 1280 and 390 px: axe-core clean, no horizontal
scroll, controls a finger can hit, and a screenshot kept for a person to look at.

The pages are listed from the URLconf, so a page added later is visited too: a route
without parameters is visited as it is; a parameter is filled from the objects below
(by its converter otherwise; a custom converter fails the test, asking for a sample).
Each page is loaded once per role and checked at both widths by resizing the window; the
error pages share one template, so the browser checks the first of each status and the
rest are checked for their way back in the HTML.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from audit_app.models import AuditEvent
from tests.browser.page_checks import HEIGHT, WIDTHS, axe_findings, axe_source, width_findings
from tests.browser.test_approvals import PASSWORD, Agent
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]

ROLES = ("operator", "admin", "auditor")
# Not pages: the API and Django's admin have their own checks; the health document is JSON.
NOT_PAGES = ("api/", "admin/", "healthz", "accounts/logout/")
# Addresses no route has: the 404 page is a page too.
MISSING_PATHS = ("/no/such/page/",)
PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


def console_routes() -> list[str]:
    """The console's routes as written in the URLconf (``agents/<uuid:agent_id>/`` ...)."""

    def walk(patterns: list[Any], prefix: str) -> Iterator[str]:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                yield from walk(entry.url_patterns, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                yield prefix + str(entry.pattern)

    return sorted({r for r in walk(get_resolver().url_patterns, "") if not r.startswith(NOT_PAGES)})


def fill(route: str, samples: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group("name")
        if name in samples:
            return samples[name]
        # An action's object: a GET is refused before it is looked up; a page shows its 404.
        fallback = {"uuid": str(uuid.uuid4()), "int": "1", "str": "sample", "slug": "sample"}
        converter = match.group("converter") or "str"
        if converter in fallback:
            return fallback[converter]
        raise AssertionError(f"no sample value for <{name}> in {route}: add one to the samples")

    return "/" + PARAMETER.sub(value, route)


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("page-screenshots")


@pytest.fixture
def samples(daphne_server: str) -> Iterator[dict[str, str]]:
    agent = Agent(daphne_server)
    called = agent.call("test_echo", {"text": "a call for every page to show"})
    event = AuditEvent.objects.filter(agent_name=agent.name).order_by("-id").first()
    assert event is not None
    yield {
        "agent_id": str(event.agent_id),
        "event_id": str(event.id),
        "invocation_id": called["id"],
        "name": "test_echo",
    }
    agent.http.close()


WAY_BACK = re.compile(r'<nav class="way-back"[^>]*>\s*<a class="button" href="/">')


def check_page(page: Any, source: str, shots: Path, name: str) -> list[str]:
    """The page as loaded, at each width: the window is resized, not the page reloaded."""
    found: list[str] = []
    for width, pixels in WIDTHS.items():
        page.set_viewport_size({"width": pixels, "height": HEIGHT})
        page.screenshot(path=str(shots / f"{name}-{width}.png"), full_page=True)
        found += [f"{pixels} px: {problem}" for problem in width_findings(page)]
        found += [f"{pixels} px: {problem}" for problem in axe_findings(page, source)]
    return found


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
def test_every_page_is_accessible_and_fits_the_screen(
    role: str,
    daphne_server: str,
    browser: Any,
    samples: dict[str, str],
    screenshots: Path,
) -> None:
    source = axe_source()
    username = f"{role}-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role=role, password=PASSWORD)
    context = browser.new_context(viewport={"width": WIDTHS["wide"], "height": HEIGHT})
    page = context.new_page()
    # Signed out first: the sign-in page itself is one of the pages.
    page.goto(daphne_server + "/accounts/login/")
    problems = {
        "/accounts/login/ (signed out)": check_page(page, source, screenshots, f"{role}-login")
    }
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(daphne_server + "/")
    visited: list[str] = []
    error_pages_seen: set[int] = set()
    for path in [fill(route, samples) for route in console_routes()] + list(MISSING_PATHS):
        answer = page.request.get(daphne_server + path, max_redirects=0)
        if "text/html" not in answer.headers.get("content-type", ""):
            continue  # an export: a download, not a page
        if 300 <= answer.status < 400:
            continue  # a redirect to a page that is itself visited
        html = answer.text()
        if "<html" not in html[:500].lower():
            continue  # a fragment (a panel polled by htmx): checked inside its page
        visited.append(f"{path} {answer.status}")
        found: list[str] = []
        if answer.status >= 400 and not WAY_BACK.search(html):
            found.append(f"the {answer.status} page offers no way back")
        # One error page per status is enough for the browser: they share one template.
        if answer.status < 400 or answer.status not in error_pages_seen:
            error_pages_seen.add(answer.status)
            page.goto(daphne_server + path)
            name = f"{role}-" + (path.strip("/").replace("/", "_") or "dashboard")
            found += check_page(page, source, screenshots, name)
        if found:
            problems[f"{path} ({answer.status})"] = found
    context.close()
    assert len(visited) >= 5, visited  # the sweep did reach the console's pages
    failures = {where: found for where, found in problems.items() if found}
    assert not failures, "\n".join(
        f"{where}:\n  " + "\n  ".join(found) for where, found in failures.items()
    )
