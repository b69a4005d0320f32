"""The secrets page: admins only; values go in and never come out; refusals shown
where the person acted; the agent page lists its grants."""

from __future__ import annotations

import re
import secrets

import pytest
from django.test import Client

from audit_app.record import Actor
from secrets_app.models import SecretVersion
from secrets_app.services import secret_grant, secret_set
from tests.common.permission_suite import ADMINS, PermissionSuite, signed_in
from trust_app.models import Agent
from trust_app.services.agents import agent_create, person_create

pytestmark = pytest.mark.django_db


class TestSecretsPageAccess(PermissionSuite):
    path = "/secrets/"
    allowed = ADMINS


class TestSecretAddAccess(PermissionSuite):
    path = "/secrets/add/"
    allowed = ADMINS
    method = "post"
    data = {"name": "SUITE_SECRET", "value": "suite-value-123456"}
    ok_status = 302


@pytest.fixture
def admin() -> Client:
    person_create(username="secrets-admin", role="admin", password=None)
    return signed_in("secrets-admin")


def _section(page: str, element_id: str) -> str:
    """The element with this id: a page section, or a row of the secrets table."""
    end = "tr" if element_id.startswith("secret-") and element_id != "secret-grants" else "section"
    found = re.search(rf'id="{element_id}".*?</{end}>', page, re.S)
    assert found, f"no #{element_id} on the page"
    return found.group(0)


def test_an_admin_adds_a_secret_and_the_page_never_shows_its_value(admin: Client) -> None:
    value = "pg-" + secrets.token_urlsafe(20)
    response = admin.post("/secrets/add/", {"name": "PG_PASSWORD", "value": value}, follow=True)
    assert response.status_code == 200
    page = response.content.decode()
    assert "stored PG_PASSWORD version 1" in page
    row = _section(page, "secret-PG_PASSWORD")
    assert "active" in row and "never" in row  # not used yet
    assert value not in page
    assert SecretVersion.objects.get(secret__name="PG_PASSWORD").ciphertext


def test_a_refused_value_is_shown_beside_its_form_without_the_value(admin: Client) -> None:
    response = admin.post("/secrets/add/", {"name": "TOO_SHORT", "value": "abc12"})
    assert response.status_code == 400
    page = response.content.decode()
    add = _section(page, "add-secret")
    assert 'role="alert"' in add and "at least" in add
    assert 'value="abc12"' not in page
    # The rotation of one row fails beside that row, not elsewhere.
    secret_set(name="ROW_ONE", value="row-one-value-1", actor=Actor.system())
    secret_set(name="ROW_TWO", value="row-two-value-2", actor=Actor.system())
    response = admin.post("/secrets/ROW_TWO/rotate/", {"value": "x\ny-long-enough"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "one line" in _section(page, "secret-ROW_TWO")
    assert 'role="alert"' not in _section(page, "secret-ROW_ONE")
    # Positive control: a good value rotates it to version 2.
    ok = admin.post("/secrets/ROW_TWO/rotate/", {"value": "row-two-value-3"}, follow=True)
    assert "stored ROW_TWO version 2" in ok.content.decode()


def test_grants_are_made_on_the_page_and_shown_on_the_agent_page(admin: Client) -> None:
    agent = agent_create(name="grantee", access_level="standard").agent
    secret_set(name="API_KEY", value="api-key-value-1", actor=Actor.system())
    refused = admin.post("/secrets/API_KEY/grant/", {"agent": "grantee", "tool": "", "server": ""})
    assert refused.status_code == 400
    assert "either a tool or an upstream MCP server" in _section(
        refused.content.decode(), "secret-API_KEY"
    )
    granted = admin.post(
        "/secrets/API_KEY/grant/", {"agent": "grantee", "tool": "http_request"}, follow=True
    )
    assert "grantee may use API_KEY with http_request" in granted.content.decode()
    agent_page = admin.get(f"/agents/{agent.id}/").content.decode()
    grants = _section(agent_page, "secret-grants")
    assert "API_KEY" in grants and "http_request" in grants
    assert "api-key-value-1" not in agent_page


def test_a_sealed_grant_is_made_on_the_page_with_its_hosts_and_injection(admin: Client) -> None:
    agent_create(name="builder", access_level="elevated")
    secret_set(name="DEPLOY_KEY", value="deploy-key-value-1", actor=Actor.system())
    # A program's tool without hosts: refused beside the form, saying what is needed.
    refused = admin.post(
        "/secrets/DEPLOY_KEY/grant/", {"agent": "builder", "tool": "shell_command"}
    )
    assert refused.status_code == 400
    assert "names the hosts the value may go to" in _section(
        refused.content.decode(), "secret-DEPLOY_KEY"
    )
    bad = admin.post(
        "/secrets/DEPLOY_KEY/grant/",
        {
            "agent": "builder",
            "tool": "shell_command",
            "hosts": "api.example.com",
            "inject": "cookie",
        },
    )
    assert bad.status_code == 400
    assert "allowed: bearer, basic" in _section(bad.content.decode(), "secret-DEPLOY_KEY")
    granted = admin.post(
        "/secrets/DEPLOY_KEY/grant/",
        {
            "agent": "builder",
            "tool": "shell_command",
            "hosts": "API.example.com, *.example.org:443",
            "inject": "header:X-Api-Key",
        },
        follow=True,
    )
    page = granted.content.decode()
    assert (
        "builder may use DEPLOY_KEY with shell_command → api.example.com, *.example.org:443 "
        "(header:X-Api-Key)"
    ) in page
    assert "deploy-key-value-1" not in page


def test_revoke_from_the_page_removes_grants_and_values(admin: Client) -> None:
    agent = Agent.objects.create(name="revokee", access_level="standard", workspace="/tmp/r")
    secret_set(name="OLD_KEY", value="old-key-value-1", actor=Actor.system())
    secret_grant(name="OLD_KEY", agent=agent, tool="http_request", actor=Actor.system())
    page = admin.post("/secrets/OLD_KEY/revoke/", follow=True).content.decode()
    row = _section(page, "secret-OLD_KEY")
    assert "revoked" in row and "no grants" in row
    again = admin.post("/secrets/OLD_KEY/revoke/")
    assert again.status_code == 400
    assert "no active secret" in _section(again.content.decode(), "secret-OLD_KEY")
