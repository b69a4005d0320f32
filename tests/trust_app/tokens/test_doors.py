"""Agent tokens with a life at the real doors (REST, MCP, /metrics, through daphne):
each attack beside its positive control, each refusal in the envelope and audited."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.utils import timezone

from audit_app.models import AuditEvent
from audit_app.record import Actor
from tests.synthorg_site.http_edge.conftest import stranger_budget_reset
from trust_app.models import Agent, AgentToken
from trust_app.services.agents import agent_create
from trust_app.services.tokens import agent_token_issue, agent_token_revoke, agent_token_rotate

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ADMIN = Actor.system("test admin")
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}


@pytest.fixture
def agent() -> Iterator[Agent]:
    stranger_budget_reset()  # refusals without a known agent share the loopback budget
    yield agent_create(name=f"life-{uuid.uuid4().hex[:10]}", access_level="standard").agent


def rest(base: str, token: str) -> httpx.Response:
    return httpx.get(base + "/api/v1/me/", headers={"Authorization": f"Bearer {token}"}, timeout=60)


def mcp(base: str, token: str) -> httpx.Response:
    return httpx.post(
        base + "/mcp/",
        json=INITIALIZE,
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
        },
        timeout=60,
    )


def metrics(base: str, token: str) -> httpx.Response:
    return httpx.get(base + "/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=60)


def audited(response: httpx.Response) -> AuditEvent:
    return AuditEvent.objects.get(
        kind="request.refused", request_id=response.headers["X-Request-ID"]
    )


def test_a_token_works_before_expiry_and_is_refused_after(daphne_server: str, agent: Agent) -> None:
    issued = agent_token_issue(agent=agent, actor=ADMIN, label="ci")
    assert rest(daphne_server, issued.plaintext).status_code == 200
    assert mcp(daphne_server, issued.plaintext).status_code == 200
    AgentToken.objects.filter(pk=issued.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    refused = rest(daphne_server, issued.plaintext)
    assert refused.status_code == 401
    error = refused.json()["error"]
    assert error["code"] == "unauthenticated"
    assert f"the agent token {issued.token.public_id} expired at" in error["message"]
    assert "expired at" in audited(refused).reason
    over_mcp = mcp(daphne_server, issued.plaintext)
    assert over_mcp.status_code == 401
    assert "expired at" in over_mcp.json()["error"]["message"]
    assert over_mcp.json()["error"]["data"]["code"] == "unauthenticated"
    assert "expired at" in audited(over_mcp).reason


def test_a_revoked_token_is_refused_and_says_so(daphne_server: str, agent: Agent) -> None:
    issued = agent_token_issue(agent=agent, actor=ADMIN)
    assert rest(daphne_server, issued.plaintext).status_code == 200
    assert agent_token_revoke(token=issued.token, actor=ADMIN)
    refused = rest(daphne_server, issued.plaintext)
    assert refused.status_code == 401
    assert "was revoked at" in refused.json()["error"]["message"]
    assert AuditEvent.objects.filter(kind="agent.token_revoked", agent_id=agent.id).exists()


def test_rotation_keeps_the_old_token_for_the_overlap_then_refuses_it(
    daphne_server: str, agent: Agent
) -> None:
    old = agent_token_issue(agent=agent, actor=ADMIN, scopes=["agent_api"])
    new = agent_token_rotate(token=old.token, actor=ADMIN, overlap_seconds=600)
    assert new.token.scopes == ["agent_api"]
    # In the overlap both work: the agent switches without a gap.
    assert rest(daphne_server, old.plaintext).status_code == 200
    assert rest(daphne_server, new.plaintext).status_code == 200
    # The overlap runs out (moved, not waited for).
    AgentToken.objects.filter(pk=old.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    refused = rest(daphne_server, old.plaintext)
    assert refused.status_code == 401
    assert "replaced by rotation" in refused.json()["error"]["message"]
    assert rest(daphne_server, new.plaintext).status_code == 200
    event = AuditEvent.objects.get(kind="agent.token_rotated", agent_id=agent.id)
    assert event.data["replaces"] == old.token.public_id
    assert event.data["token"] == new.token.public_id


def test_rotation_without_overlap_refuses_the_old_token_at_once(
    daphne_server: str, agent: Agent
) -> None:
    old = agent_token_issue(agent=agent, actor=ADMIN)
    new = agent_token_rotate(token=old.token, actor=ADMIN, overlap_seconds=0)
    assert rest(daphne_server, old.plaintext).status_code == 401
    assert rest(daphne_server, new.plaintext).status_code == 200


def test_an_mcp_only_token_cannot_call_rest(daphne_server: str, agent: Agent) -> None:
    issued = agent_token_issue(agent=agent, actor=ADMIN, scopes=["mcp"])
    assert mcp(daphne_server, issued.plaintext).status_code == 200  # positive control
    refused = rest(daphne_server, issued.plaintext)
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["code"] == "forbidden"
    assert "needs the agent_api scope" in error["message"]
    assert audited(refused).status == "403"


def test_an_agent_api_only_token_cannot_speak_mcp(daphne_server: str, agent: Agent) -> None:
    issued = agent_token_issue(agent=agent, actor=ADMIN, scopes=["agent_api"])
    assert rest(daphne_server, issued.plaintext).status_code == 200  # positive control
    refused = mcp(daphne_server, issued.plaintext)
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["data"]["code"] == "forbidden"
    assert "needs the mcp scope" in error["message"]
    assert "needs the mcp scope" in audited(refused).reason


def test_metrics_take_a_token_with_the_metrics_scope_only(daphne_server: str, agent: Agent) -> None:
    scraper = agent_token_issue(agent=agent, actor=ADMIN, scopes=["metrics"])
    caller = agent_token_issue(agent=agent, actor=ADMIN)
    scraped = metrics(daphne_server, scraper.plaintext)
    assert scraped.status_code == 200 and "synthorg_workers_seen" in scraped.text
    # A token is judged even from loopback: one without the scope is refused.
    refused = metrics(daphne_server, caller.plaintext)
    assert refused.status_code == 403
    assert "needs the metrics scope" in refused.json()["error"]["message"]
    assert audited(refused).status == "403"
    # And the scraping token opens nothing else.
    assert rest(daphne_server, scraper.plaintext).status_code == 403
    assert mcp(daphne_server, scraper.plaintext).status_code == 403


def test_last_use_records_the_time_and_the_address(daphne_server: str, agent: Agent) -> None:
    issued = agent_token_issue(agent=agent, actor=ADMIN)
    assert issued.token.last_used_at is None
    assert rest(daphne_server, issued.plaintext).status_code == 200
    token = AgentToken.objects.get(pk=issued.token.pk)
    assert token.last_used_at is not None
    assert token.last_used_address == "127.0.0.1"


def test_a_new_token_expires_by_the_default_setting(agent: Agent, settings: Any) -> None:
    settings.SYNTHORG_AGENT_TOKEN_TTL_DAYS = 7
    issued = agent_token_issue(agent=agent, actor=ADMIN)
    assert issued.token.expires_at is not None
    left = issued.token.expires_at - timezone.now()
    assert timedelta(days=6, hours=23) < left <= timedelta(days=7)
    never = agent_token_issue(agent=agent, actor=ADMIN, never_expires=True)
    assert never.token.expires_at is None
