"""Token management on the agent's page and in `manage.py synthorg_agent token ...`."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from audit_app.models import AuditEvent
from common.platform.redis import redis_client
from synthorg_site.sessions import SessionStore
from tests.common.permission_suite import ADMINS, PermissionSuite, signed_in
from trust_app.auth import agent_token_verdict
from trust_app.models import Agent, AgentToken
from trust_app.services.agents import agent_create, person_create
from trust_app.tokens.bearer import AGENT_TOKEN_PREFIX, token_digest
from trust_app.tokens.life import Scope
from trust_app.tokens.shown_once import waiting_key

pytestmark = pytest.mark.django_db


class TestAgentTokenRotateAccess(PermissionSuite):
    path = "/agents/{agent}/tokens/{token}/rotate/"
    allowed = ADMINS
    method = "post"
    ok_status = 302  # to the page that shows the new token once


class TestAgentTokenShownOnceAccess(PermissionSuite):
    path = "/agents/{agent}/tokens/new/"
    allowed = ADMINS


@pytest.fixture
def admin() -> Client:
    person_create(username="ada", role="admin", password=None)
    return signed_in("ada")


@pytest.fixture
def agent() -> Agent:
    return agent_create(name="tok-1", access_level="standard").agent


def shown_token(html: str) -> str:
    return html.split('id="new-token">')[1].split("</pre>")[0]


def issued_and_shown(admin: Client, path: str, data: dict | None = None) -> tuple[str, str]:
    """POST that issues, then the one GET it redirects to: (the shown plaintext, that URL)."""
    response = admin.post(path, data or {})
    assert response.status_code == 302, response.content
    page = admin.get(response["Location"])
    assert page.status_code == 200 and page["Cache-Control"] == "no-store"
    return shown_token(page.content.decode()), response["Location"]


def test_the_page_issues_a_token_with_scopes_and_expiry(admin: Client, agent: Agent) -> None:
    plaintext, _ = issued_and_shown(
        admin,
        f"/agents/{agent.id}/tokens/",
        {"label": "scraper", "scopes": ["metrics"], "expires_in_days": "3"},
    )
    token = AgentToken.objects.get(digest=token_digest(plaintext))
    assert token.scopes == ["metrics"] and token.expires_at is not None
    assert agent_token_verdict(plaintext, scope=Scope.METRICS).agent == agent
    assert agent_token_verdict(plaintext, scope=Scope.AGENT_API).refusal is not None
    page = admin.get(f"/agents/{agent.id}/").content.decode()
    assert "metrics" in page and token.public_id in page


def test_a_bad_scope_from_the_page_issues_nothing(admin: Client, agent: Agent) -> None:
    before = AgentToken.objects.filter(agent=agent).count()
    response = admin.post(f"/agents/{agent.id}/tokens/", {"scopes": ["root"]})
    assert response.status_code == 302
    assert AgentToken.objects.filter(agent=agent).count() == before


def test_rotating_from_the_page_shows_the_new_token_and_keeps_the_old_for_the_overlap(
    admin: Client, agent: Agent
) -> None:
    old = AgentToken.objects.get(agent=agent)
    plaintext, _ = issued_and_shown(admin, f"/agents/{agent.id}/tokens/{old.id}/rotate/")
    new = AgentToken.objects.get(digest=token_digest(plaintext))
    old.refresh_from_db()
    assert old.rotated_at is not None and old.active and old.expires_at is not None
    assert new.scopes == old.scopes and new.label == old.label
    assert "rotated; valid until" in admin.get(f"/agents/{agent.id}/").content.decode()
    # A rotated token is not rotated twice.
    again = admin.post(f"/agents/{agent.id}/tokens/{old.id}/rotate/")
    assert again.status_code == 302
    assert AuditEvent.objects.filter(kind="agent.token_rotated").count() == 1


def test_a_reload_shows_the_token_no_more_and_issues_none(admin: Client, agent: Agent) -> None:
    before = AgentToken.objects.filter(agent=agent).count()
    issued_events = AuditEvent.objects.filter(kind="agent.token_issued", agent_id=agent.id)
    audited = issued_events.count()
    # Positive control: the GET the issuing POST redirects to shows the new token.
    plaintext, shown_at = issued_and_shown(admin, f"/agents/{agent.id}/tokens/", {"label": "x"})
    assert shown_at == f"/agents/{agent.id}/tokens/new/"
    assert AgentToken.objects.filter(agent=agent).count() == before + 1
    # Attack on a second token: reloading repeats the GET; nothing is shown or issued.
    again = admin.get(shown_at)
    html = again.content.decode()
    assert again.status_code == 200 and again["Cache-Control"] == "no-store"
    assert 'id="token-gone"' in html and plaintext not in html and 'id="new-token"' not in html
    assert AgentToken.objects.filter(agent=agent).count() == before + 1
    assert issued_events.count() == audited + 1


def waiting(admin: Client, agent: Agent) -> bytes | None:
    """The admin's token for ``agent`` waiting to be shown, as Redis holds it."""
    session = SessionStore(session_key=admin.cookies["sessionid"].value)
    stored = redis_client().get(waiting_key(session, str(agent.id)))
    assert stored is None or isinstance(stored, bytes)
    return stored


def test_the_waiting_token_is_sealed_where_it_waits(admin: Client, agent: Agent) -> None:
    response = admin.post(f"/agents/{agent.id}/tokens/", {"label": "sealed"})
    assert response.status_code == 302
    token = AgentToken.objects.get(agent=agent, label="sealed")
    stored = waiting(admin, agent)
    # Attack: whoever reads Redis finds no plaintext, only its sealed form, under a name
    # that is not the session's key...
    assert stored is not None and json.loads(stored)["token"] == str(token.id)
    session_key = admin.cookies["sessionid"].value
    assert not any(session_key.encode() in key for key in redis_client().scan_iter("*"))
    # ...positive control: the cookie's holder opens it, once.
    plaintext = shown_token(admin.get(response["Location"]).content.decode())
    assert token_digest(plaintext) == token.digest
    assert plaintext.startswith(AGENT_TOKEN_PREFIX) and plaintext.encode() not in stored
    assert waiting(admin, agent) is None


def test_a_token_left_waiting_too_long_is_not_shown(
    admin: Client, agent: Agent, settings: Any
) -> None:
    settings.SYNTHORG_TOKEN_SHOWN_ONCE_SECONDS = -1  # older than allowed as soon as sealed
    response = admin.post(f"/agents/{agent.id}/tokens/", {"label": "late"})
    assert waiting(admin, agent) is not None  # positive control: it was kept
    html = admin.get(response["Location"]).content.decode()
    assert 'id="token-gone"' in html and 'id="new-token"' not in html
    assert waiting(admin, agent) is None


def test_another_agents_page_does_not_take_the_waiting_token(admin: Client, agent: Agent) -> None:
    other = agent_create(name="tok-2", access_level="standard").agent
    response = admin.post(f"/agents/{agent.id}/tokens/", {"label": "mine"})
    html = admin.get(f"/agents/{other.id}/tokens/new/").content.decode()
    assert 'id="token-gone"' in html and 'id="new-token"' not in html
    plaintext = shown_token(admin.get(response["Location"]).content.decode())
    assert AgentToken.objects.get(digest=token_digest(plaintext)).agent == agent


def test_the_shown_once_page_only_answers_get(admin: Client, agent: Agent) -> None:
    assert admin.post(f"/agents/{agent.id}/tokens/new/").status_code == 405


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("synthorg_agent", *args, stdout=out)
    return out.getvalue()


def test_the_command_issues_lists_rotates_and_revokes(agent: Agent) -> None:
    issued = run("token", "issue", agent.name, "--scopes", "mcp,metrics", "--expires-in-days", "5")
    plaintext = issued.strip().splitlines()[-1]
    token = AgentToken.objects.get(digest=token_digest(plaintext))
    assert token.scopes == ["mcp", "metrics"]
    listing = run("token", "list", agent.name)
    assert token.public_id in listing and "mcp,metrics" in listing

    rotated = run("token", "rotate", token.public_id, "--overlap", "0")
    new_plain = rotated.strip().splitlines()[-1]
    assert agent_token_verdict(plaintext, scope=Scope.MCP).refusal is not None
    assert agent_token_verdict(new_plain, scope=Scope.MCP).agent == agent

    new = AgentToken.objects.get(digest=token_digest(new_plain))
    assert "revoked" in run("token", "revoke", new.public_id)
    verdict = agent_token_verdict(new_plain, scope=Scope.MCP)
    assert verdict.refusal is not None and verdict.refusal.outcome == "revoked"


def test_the_command_refuses_unknown_scopes_and_tokens(agent: Agent) -> None:
    with pytest.raises(CommandError, match="scopes are: agent_api, mcp, metrics"):
        run("token", "issue", agent.name, "--scopes", "everything")
    with pytest.raises(CommandError, match="no agent token with id"):
        run("token", "revoke", "nosuchid")
