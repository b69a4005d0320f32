"""People: login, logout, the base layout, and who gets which page."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from trust_app.services.agents import person_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator() -> object:
    return person_create(username="opal", role="operator", password="pw-opal-12345")


def test_anonymous_is_sent_to_the_login_page() -> None:
    response = Client().get("/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/"


def test_login_page_renders_with_csrf() -> None:
    response = Client().get("/accounts/login/")
    assert response.status_code == 200
    assert b'name="csrfmiddlewaretoken"' in response.content
    assert b"Sign in" in response.content


def test_wrong_password_says_so_and_does_not_sign_in(operator: object) -> None:
    client = Client()
    response = client.post("/accounts/login/", {"username": "opal", "password": "nope"})
    assert response.status_code == 200
    assert b"did not match" in response.content
    assert client.get("/").status_code == 302


def test_login_shows_the_person_and_role_and_logout_ends_it(operator: object) -> None:
    client = Client(enforce_csrf_checks=False)
    response = client.post(
        "/accounts/login/", {"username": "opal", "password": "pw-opal-12345"}, follow=True
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "opal" in html and 'class="role role-operator"' in html
    assert 'id="pending-count"' in html, "operators see the live pending-approvals slot"
    assert "/static/vendor/htmx/htmx-2.0.11.min.js" in html
    client.post("/accounts/logout/")
    assert client.get("/").status_code == 302


def test_auditor_has_no_approvals_slot_but_has_audit() -> None:
    person_create(username="aud", role="auditor", password="pw-aud-123456")
    client = Client()
    client.login(username="aud", password="pw-aud-123456")
    html = client.get("/").content.decode()
    assert 'id="pending-count"' not in html
    assert 'href="/audit/"' in html


def test_a_person_without_a_role_is_refused() -> None:
    get_user_model().objects.create_user(username="norole", password="pw-none-12345")
    client = Client()
    client.login(username="norole", password="pw-none-12345")
    assert client.get("/").status_code == 403


def test_admin_site_is_for_superusers_only(operator: object) -> None:
    client = Client()
    client.login(username="opal", password="pw-opal-12345")
    response = client.get("/admin/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_vendored_htmx_is_served() -> None:
    for path in (
        "/static/vendor/htmx/htmx-2.0.11.min.js",
        "/static/vendor/htmx/htmx-ext-ws-2.0.4.min.js",
    ):
        response = Client().get(path)
        assert response.status_code == 200
        body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
        assert b"htmx" in body
