"""404 and CSRF pages as `make run` serves them: a real daphne with SYNTHORG_ENV=dev, where
DEBUG is on. Django's debug pages (which list every URL pattern) never answer a page's 404;
a CSRF failure is titled for what happened, not for the person's role."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from common.testing import free_port, http_status, python_argv, running, wait_until
from tests.common.permission_suite import signed_in
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def dev_console(test_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """daphne with the environment `make run` gives it (SYNTHORG_ENV=dev, DEBUG unset)."""
    port = free_port()
    env = {**test_env, "SYNTHORG_ENV": "dev"}
    env.pop("DEBUG", None)  # dev's default: on
    argv = python_argv("-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                       "synthorg_site.asgi:application")  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with running(argv, env=env, log_path=tmp_path / "daphne.log") as server:
        wait_until(
            lambda: (
                http_status(url + "/healthz") in (200, 503) or server.process.poll() is not None
            ),
            timeout=180,
            what="daphne to answer",
        )
        assert server.process.poll() is None, server.output()
        yield url


@pytest.fixture
def operator(dev_console: str) -> Iterator[httpx.Client]:
    person_create(username="dev-operator", role="operator", password=None)
    cookie = signed_in("dev-operator").cookies["sessionid"].value
    with httpx.Client(base_url=dev_console, cookies={"sessionid": cookie}, timeout=60) as http:
        yield http


def title(html: str) -> str:
    found = re.search(r"<title>(.*?)</title>", html, re.S)
    return found.group(1).strip() if found else ""


def assert_console_page(response: httpx.Response, status: int, page_title: str) -> str:
    body = response.text
    assert response.status_code == status, body[:500]
    assert 'class="topbar"' in body, f"not in the console's layout: {body[:300]}"
    assert f'data-status="{status}"' in body
    assert title(body) == f"{status} · {page_title} · SynthOrg Console"
    assert "URLconf" not in body and "DEBUG = True" not in body  # no debug page, no patterns
    return body


def test_debug_is_on_as_make_run_has_it(dev_console: str) -> None:
    # Positive control: in this mode Django's debug page answers what the console does not
    # draw itself (a request for a host ALLOWED_HOSTS refuses), so DEBUG is on.
    answer = httpx.get(dev_console + "/", headers={"Host": "elsewhere.example"}, timeout=60)
    assert answer.status_code == 400 and "DisallowedHost" in answer.text


def test_a_404_in_dev_is_the_consoles_page(operator: httpx.Client) -> None:
    body = assert_console_page(operator.get("/no/such/page/"), 404, "Nothing here")
    assert 'href="/approvals/"' in body  # the operator's own navigation
    missing = uuid.uuid4()
    body = assert_console_page(operator.get(f"/agents/{missing}/"), 404, "Nothing here")
    assert f"no agent {missing}" in body  # the view's own reason
    # Signed out, the same page (with a way to sign in).
    anonymous = httpx.get(str(operator.base_url) + "/no/such/page/", timeout=60)
    assert "Sign in" in assert_console_page(anonymous, 404, "Nothing here")
    # Positive controls: a page that exists answers, a path without its slash is redirected,
    # and the API keeps its JSON envelope.
    assert operator.get("/approvals/").status_code == 200
    redirected = operator.get("/approvals")
    assert redirected.status_code == 301 and redirected.headers["Location"] == "/approvals/"
    api = operator.get("/api/v1/no-such-endpoint/")
    assert api.status_code == 404 and api.json()["error"]["code"] == "not_found"


def test_a_csrf_failure_in_dev_is_titled_for_the_form(operator: httpx.Client) -> None:
    page = operator.get("/approvals/")
    assert page.status_code == 200 and "csrftoken" in operator.cookies
    refused = operator.post("/approvals/decide/", data={"csrfmiddlewaretoken": "x" * 64})
    body = assert_console_page(refused, 403, "That form could not be accepted")
    assert "older than your session" in body and "Not for your role" not in body
