"""Upstream MCP servers' credentials: `secrets_for_server`, the bridge's one door."""

from __future__ import annotations

import pytest

from audit_app.models import AuditEvent
from audit_app.record import Actor
from secrets_app.broker import SecretNotGrantedError, secrets_for_server
from secrets_app.services import secret_grant, secret_set
from trust_app.models import Agent

pytestmark = pytest.mark.django_db
ADMIN = Actor.system("test admin")


def _agent(name: str) -> Agent:
    return Agent.objects.create(name=name, access_level="standard", workspace=f"/tmp/{name}")


def test_a_server_grant_serves_that_server_for_that_agent_only() -> None:
    agent, other = _agent("srv-agent"), _agent("srv-other")
    secret_set(name="GH_PAT", value="ghp-server-value-1", actor=ADMIN)
    secret_grant(name="GH_PAT", agent=agent, tool="http_request", actor=ADMIN)
    credentials = {"GITHUB_TOKEN": "GH_PAT"}
    # Attacks: a tool grant is not a server grant; another server, another agent.
    with pytest.raises(SecretNotGrantedError):
        secrets_for_server(agent=agent, server="github", credentials=credentials)
    secret_grant(name="GH_PAT", agent=agent, server="github", actor=ADMIN)
    for who, server in ((agent, "gitlab"), (other, "github"), (None, "github")):
        with pytest.raises(SecretNotGrantedError) as refused:
            secrets_for_server(agent=who, server=server, credentials=credentials)
        assert "GH_PAT" not in refused.value.message
    # Positive control.
    assert secrets_for_server(agent=agent, server="github", credentials=credentials) == {
        "GITHUB_TOKEN": "ghp-server-value-1"
    }
    used = AuditEvent.objects.get(kind="secret.used", agent_name="srv-agent")
    assert (used.data["secret"], used.data["server"]) == ("GH_PAT", "github")


def test_a_shared_server_grant_has_no_agent_and_serves_no_single_agent() -> None:
    agent = _agent("srv-shared")
    secret_set(name="SEARCH_KEY", value="search-key-value-1", actor=ADMIN)
    secret_grant(name="SEARCH_KEY", agent=None, server="search", actor=ADMIN)
    credentials = {"Authorization": "SEARCH_KEY"}
    assert secrets_for_server(agent=None, server="search", credentials=credentials) == {
        "Authorization": "search-key-value-1"
    }
    with pytest.raises(SecretNotGrantedError):
        secrets_for_server(agent=agent, server="search", credentials=credentials)


def test_a_tool_grant_always_names_an_agent() -> None:
    secret_set(name="LONE", value="lone-value-12345", actor=ADMIN)
    from common.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="names the agent"):
        secret_grant(name="LONE", agent=None, tool="http_request", actor=ADMIN)
