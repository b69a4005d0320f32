"""403, 404, 405 and 500 on console pages: the console's layout, the reason, a way back.

Positive controls beside each: the same person gets the page they may open, the API keeps
the JSON envelope for the same failures.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client, override_settings
from django.urls import include, path

from trust_app.services.agents import agent_create, person_create

pytestmark = pytest.mark.django_db
PASSWORD = "pw-error-pages-1"


def _broken(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a page that fails")


urlpatterns = [
    path("broken/", _broken),
    path("api/v1/broken/", _broken),
    path("", include("synthorg_site.urls")),
]
handler500 = "synthorg_site.error_pages.views.page_500"


def signed_in(role: str) -> Client:
    username = f"{role}-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role=role, password=PASSWORD)
    client = Client(raise_request_exception=False)
    assert client.login(username=username, password=PASSWORD)
    return client


def assert_console_page(response: Any, status: int, *words: str) -> str:
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    body = response.content.decode()
    assert 'class="topbar"' in body, "not in the console's layout"
    assert f'data-status="{status}"' in body
    assert 'href="/">Back to the dashboard' in body
    for word in words:
        assert word in body
    return body


def test_a_page_for_another_role_is_a_403_page_saying_which_roles() -> None:
    auditor = signed_in("auditor")
    body = assert_console_page(auditor.get("/approvals/"), 403, "Not for your role")
    assert "operators" in body or "the approvals inbox is for operators" in body
    assert 'href="/audit/"' in body  # the auditor's own navigation is there
    assert auditor.get("/audit/").status_code == 200  # positive control


def test_an_unknown_agent_and_an_unknown_address_are_404_pages() -> None:
    operator = signed_in("operator")
    missing = uuid.uuid4()
    assert_console_page(operator.get(f"/agents/{missing}/"), 404, f"no agent {missing}")
    body = assert_console_page(operator.get("/no/such/page/"), 404, "Nothing here")
    assert "tried" not in body.lower()  # the resolver's patterns are never shown
    known = agent_create(name=f"a-{uuid.uuid4().hex[:6]}", access_level="standard").agent
    assert operator.get(f"/agents/{known.id}/").status_code == 200


def test_a_wrong_method_on_a_page_is_a_405_page_naming_the_allowed_method() -> None:
    operator = signed_in("operator")
    response = operator.get("/approvals/decide/")
    assert_console_page(response, 405, "POST")
    assert response["Allow"] == "POST"


def test_the_api_keeps_the_json_envelope_for_the_same_failures() -> None:
    operator = signed_in("operator")
    response = operator.get("/api/v1/no-such-endpoint/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_get_on_the_agent_editor_goes_to_the_editor_on_the_agent_page() -> None:
    admin = signed_in("admin")
    agent = agent_create(name=f"a-{uuid.uuid4().hex[:6]}", access_level="standard").agent
    response = admin.get(f"/agents/{agent.id}/edit/")
    assert response.status_code == 302
    assert response["Location"] == f"/agents/{agent.id}/#edit"
    assert admin.get(response["Location"]).status_code == 200
    # An operator may read the agent but not open its editor.
    assert_console_page(signed_in("operator").get(f"/agents/{agent.id}/edit/"), 403)


@override_settings(ROOT_URLCONF=__name__)
def test_a_page_that_fails_is_a_500_page_in_the_layout_and_the_api_an_envelope() -> None:
    operator = signed_in("operator")
    body = assert_console_page(operator.get("/broken/"), 500, "Something broke on our side")
    assert "a page that fails" not in body  # the exception is logged, never shown
    api = operator.get("/api/v1/broken/")
    assert api.status_code == 500
    assert api.json()["error"]["code"] == "internal"


def test_a_form_posted_with_a_stale_csrf_token_is_a_403_page_saying_to_reload() -> None:
    username = f"operator-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role="operator", password=PASSWORD)
    client = Client(enforce_csrf_checks=True)
    assert client.login(username=username, password=PASSWORD)
    assert client.get("/approvals/").status_code == 200  # the page sets the CSRF cookie
    stale = client.post(
        "/approvals/decide/", {"decision": "approve", "csrfmiddlewaretoken": "x" * 64}
    )
    body = assert_console_page(stale, 403, "older than your session")
    # Titled for what happened: the role is not the reason.
    assert "<title>403 · That form could not be accepted · SynthOrg Console</title>" in body
    assert "Not for your role" not in body
    # Without the cookie at all, the page says so.
    client.cookies.pop("csrftoken")
    bare = client.post("/approvals/decide/", {"decision": "approve"})
    body = assert_console_page(bare, 403, "did not send the console&#x27;s cookie")
    assert "Not for your role" not in body
    # Positive control: a role refusal keeps its own title.
    assert "Not for your role" in signed_in("auditor").get("/approvals/").content.decode()
