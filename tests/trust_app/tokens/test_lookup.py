"""The one-statement agent-token lookup finds exactly what the ORM query finds."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db.models import Model

from audit_app.record import Actor
from trust_app.auth import agent_for_token, agent_token_verdict
from trust_app.models import Agent, AgentPermissions, AgentToken
from trust_app.services.agents import agent_create, agent_token_revoke
from trust_app.tokens.bearer import token_digest
from trust_app.tokens.life import Scope
from trust_app.tokens.lookup import find_agent_token

pytestmark = pytest.mark.django_db


def fields_of(instance: Model) -> dict[str, Any]:
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def orm_lookup(plaintext: str) -> AgentToken | None:
    return (
        AgentToken.objects.select_related("agent__permissions")
        .filter(digest=token_digest(plaintext), revoked_at__isnull=True, agent__active=True)
        .first()
    )


def new_agent(**kwargs: Any) -> tuple[Agent, str]:
    created = agent_create(
        name=f"lookup-{uuid.uuid4().hex[:10]}", access_level="standard", **kwargs
    )
    return created.agent, created.token


def test_an_agent_without_permissions_is_found_as_the_orm_finds_it() -> None:
    _, token = new_agent()
    found = find_agent_token(token_digest(token))
    expected = orm_lookup(token)
    assert found is not None and expected is not None
    assert found.token_id == expected.pk and found.last_used_at == expected.last_used_at
    assert fields_of(found.agent) == fields_of(expected.agent)
    with pytest.raises(AgentPermissions.DoesNotExist):
        _ = found.agent.permissions
    assert found.agent._state.adding is False and found.agent._state.db == "default"


def test_permissions_come_along_with_their_values() -> None:
    agent, token = new_agent()
    AgentPermissions.objects.create(
        agent=agent,
        allowed=["read_file", "tool:*"],
        denied=["shell_command"],
        sub_constraints={"file_system": {"scope": "project_directory"}, "n": [1, 2.5, None]},
    )
    found = find_agent_token(token_digest(token))
    expected = orm_lookup(token)
    assert found is not None and expected is not None
    assert fields_of(found.agent.permissions) == fields_of(expected.agent.permissions)
    assert found.agent.permissions.agent is found.agent


@pytest.mark.parametrize("change", ["revoked", "inactive", "unknown"])
def test_a_dead_token_finds_nothing(change: str) -> None:
    agent, token = new_agent()
    if change == "revoked":
        agent_token_revoke(token=AgentToken.objects.get(agent=agent), actor=Actor.system())
    elif change == "inactive":
        Agent.objects.filter(pk=agent.pk).update(active=False)
    else:
        token = token + "x"
    found = find_agent_token(token_digest(token))
    # The row is found (so a refusal can say why); the token is not let in.
    assert (found is None) == (change == "unknown")
    assert orm_lookup(token) is None
    assert agent_for_token(token) is None
    verdict = agent_token_verdict(token, scope=Scope.AGENT_API)
    assert verdict.agent is None and verdict.refusal is not None
    assert verdict.refusal.outcome == {"revoked": "revoked", "inactive": "agent_inactive"}.get(
        change, "unknown"
    )


def test_a_token_let_in_is_marked_used() -> None:
    agent, token = new_agent()
    assert AgentToken.objects.get(agent=agent).last_used_at is None
    assert agent_token_verdict(token, scope=Scope.AGENT_API, address="::1").agent == agent
    marked = AgentToken.objects.get(agent=agent)
    assert marked.last_used_at is not None and marked.last_used_address == "::1"
