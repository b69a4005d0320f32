"""Over MCP, a call's purpose and task travel in optional ``_meta`` keys, as the other
fields of the REST body do; a stock client that sends none calls as before. A waiting
MCP call withdrawn because the agent's level was lowered answers at once with why.

Attack: a purpose over 500 characters is refused with the key and the limit, nothing
submitted. Controls: the same call with a purpose at the limit, and with no ``_meta``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from approvals_app.models import ApprovalRequest
from audit_app.record import Actor
from common.testing import wait_until
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.mcp.conftest import with_mcp
from tools_app.models import Invocation
from trust_app.models import Agent
from trust_app.services.agents import person_create
from trust_app.services.permissions import agent_permissions_update

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def test_purpose_and_task_ride_in_meta_and_a_stock_call_needs_neither(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent(autonomy="locked")
    said = {"synthorg/wait": 0, "synthorg/purpose": "tidy n\u043etes", "synthorg/task_id": "T-1"}

    async def work(session: Any) -> tuple[Any, Any, Any]:
        too_long = await session.call_tool(
            "test_echo", {"text": "x"}, meta={"synthorg/purpose": "p" * 501}
        )
        told = await session.call_tool("test_echo", {"text": "y"}, meta=said)
        stock = await session.call_tool("test_echo", {"text": "z"}, meta={"synthorg/wait": 0})
        return too_long, told, stock

    too_long, told, stock = with_mcp(daphne_server, client.token, work)
    assert too_long.is_error is True
    assert "synthorg/purpose must be a string of at most 500 characters" in _text(too_long)
    assert not Invocation.objects.filter(agent=client.agent, arguments={"text": "x"}).exists()

    stored = Invocation.objects.get(agent=client.agent, arguments={"text": "y"})
    assert stored.purpose == "tidy n\u043etes" and stored.task_id == "T-1"
    # Control: a call with no purpose or task is taken as ever.
    plain = Invocation.objects.get(agent=client.agent, arguments={"text": "z"})
    assert plain.purpose == "" and plain.task_id == ""
    assert plain.status == stored.status == "pending_approval"
    assert told.is_error is True and stock.is_error is True  # both await a person


def test_a_waiting_mcp_call_withdrawn_by_a_lower_level_answers_with_the_reason(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent("standard", autonomy="locked")
    admin = person_create(username="mcp-level-admin", role="admin", password=None)

    def lower_when_asked() -> None:
        try:
            asked = ApprovalRequest.objects.filter(invocation__agent=client.agent, status="pending")
            wait_until(asked.exists, timeout=60, what="the call's approval request")
            agent = Agent.objects.get(pk=client.agent.pk)
            agent_permissions_update(
                agent=agent, actor=Actor.person(admin), access_level="restricted",
                autonomy=agent.autonomy, allowed=[], denied=[], sub_constraints={},
                max_concurrent_calls=agent.max_concurrent_calls,
            )  # fmt: skip
        finally:
            connection.close()

    async def work(session: Any) -> Any:
        call = asyncio.ensure_future(session.call_tool("shell_command", {"argv": ["ls"]}))
        await asyncio.to_thread(lower_when_asked)
        return await asyncio.wait_for(call, timeout=60)

    result = with_mcp(daphne_server, client.token, work)
    assert result.is_error is True
    text = _text(result)
    assert "level restricted does not permit category terminal" in text, text
    invocation = Invocation.objects.get(agent=client.agent)
    assert invocation.status == "denied" and invocation.error_code == "no_longer_permitted"
