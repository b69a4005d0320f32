"""tools/list and tools/call over MCP end to end: the official client, a real daphne,
a real Celery worker, PostgreSQL and Redis; every call through the REST pipeline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from approvals_app.models import ApprovalRequest
from approvals_app.services import approval_decide
from audit_app.models import AuditEvent
from common.testing import RunningProcess, wait_until
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.mcp.conftest import run_fresh, with_mcp
from tools_app.models import Invocation
from tools_app.registry import tool_catalog
from trust_app.services.agents import person_create, workspace_grant

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _worker(celery_worker_process: RunningProcess) -> RunningProcess:
    return celery_worker_process


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def test_tools_list_is_exactly_what_rest_permits(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent(denied=["test_echo"])

    async def work(session: Any) -> Any:
        return await session.list_tools()

    listed = with_mcp(daphne_server, client.token, work)
    rest = client.http.get("/api/v1/tools/").json()["tools"]
    assert [t.name for t in listed.tools] == [t["name"] for t in rest]
    names = {t.name for t in listed.tools}
    assert "test_echo" not in names and "read_file" in names
    read_file = next(t for t in listed.tools if t.name == "read_file")
    contract = tool_catalog().contract("read_file")
    assert contract is not None
    assert read_file.input_schema == contract.input_schema
    assert read_file.output_schema == contract.output_schema
    assert read_file.description is not None
    assert read_file.description.startswith(contract.summary)
    assert contract.description in read_file.description
    assert read_file.meta is not None
    assert read_file.meta["synthorg/definition_hash"] == contract.definition_hash


def test_read_file_answers_the_sanitised_content_and_is_audited(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent()
    workspace = Path(client.agent.workspace)
    (workspace / "notes.txt").write_text("first line\nAKIAIOSFODNN7EXAMPLE\n")
    workspace_grant(workspace)

    async def work(session: Any) -> Any:
        return await session.call_tool("read_file", {"path": "notes.txt"})

    result = with_mcp(daphne_server, client.token, work)
    assert result.is_error is False, _text(result)
    assert "first line" in _text(result)
    assert "AKIAIOSFODNN7EXAMPLE" not in _text(result), "secrets are redacted"
    assert result.structured_content is not None
    assert result.structured_content["path"] == "notes.txt"
    invocation = Invocation.objects.get(id=result.meta["synthorg/invocation"])
    assert invocation.agent_id == client.agent.id
    assert invocation.status == "succeeded" and invocation.request_id
    assert "AKIAIOSFODNN7EXAMPLE" in invocation.raw_content
    kinds = list(
        AuditEvent.objects.filter(invocation_id=invocation.id)
        .order_by("id")
        .values_list("kind", flat=True)
    )
    assert kinds[0] == "invocation.decided" and kinds[-1] == "invocation.finished"
    decided = AuditEvent.objects.get(invocation_id=invocation.id, kind="invocation.decided")
    assert decided.actor_name == client.agent.name and decided.outcome == "allow"
    assert decided.request_id == invocation.request_id


def test_a_denied_tool_is_an_error_with_the_reason_and_an_audit_row(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent(denied=["test_counter"])

    async def work(session: Any) -> Any:
        return await session.call_tool("test_counter", {"seconds": 0})

    result = with_mcp(daphne_server, client.token, work)
    assert result.is_error is True
    invocation = Invocation.objects.get(id=result.meta["synthorg/invocation"])
    assert invocation.status == "denied"
    event = AuditEvent.objects.get(invocation_id=invocation.id, kind="invocation.decided")
    assert event.outcome == "deny" and "test_counter" in event.reason
    assert _text(result) == f"denied: {event.reason}"
    assert not (Path(client.agent.workspace) / "counter.txt").exists()


def test_invalid_arguments_are_an_error_and_audited(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent()

    async def work(session: Any) -> Any:
        return await session.call_tool("test_echo", {"text": 42, "extra": True})

    result = with_mcp(daphne_server, client.token, work)
    assert result.is_error is True
    assert "invalid_argument" in _text(result)
    assert "arguments.text" in _text(result) and "extra" in _text(result)
    assert not Invocation.objects.filter(agent=client.agent).exists()
    event = AuditEvent.objects.get(agent_id=client.agent.id, kind="invocation.refused")
    assert event.outcome == "invalid_argument" and "arguments.text" in event.reason


def test_an_unknown_tool_is_an_error_and_audited(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent()

    async def work(session: Any) -> Any:
        return await session.call_tool("no_such_tool", {})

    result = with_mcp(daphne_server, client.token, work)
    assert result.is_error is True and "no_such_tool" in _text(result)
    assert AuditEvent.objects.filter(agent_id=client.agent.id, outcome="unknown_tool").exists()


def test_a_call_awaiting_approval_names_its_invocation_and_a_repeat_gets_the_result(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:

    client = make_agent(autonomy="locked")
    meta = {"synthorg/wait": 0, "synthorg/idempotency_key": "mcp-approve-1"}

    async def call(session: Any) -> Any:
        return await session.call_tool("test_echo", {"text": "approved"}, meta=meta)

    pending = with_mcp(daphne_server, client.token, call)
    assert pending.is_error is True
    invocation = Invocation.objects.get(agent=client.agent)
    assert invocation.status == "pending_approval"
    assert f"test_echo awaits a person's approval (invocation {invocation.id}" in _text(pending)
    assert "synthorg/idempotency_key 'mcp-approve-1'" in _text(pending)
    assert "/api/" not in _text(pending), "an MCP agent is not pointed at REST URLs"

    operator = person_create(username="mcp-operator", role="operator", password=None)
    request = ApprovalRequest.objects.get(invocation=invocation)
    assert approval_decide(request=request, person=operator, decision="approve").settled

    done = with_mcp(daphne_server, client.token, call)
    assert done.is_error is False, _text(done)
    assert done.meta["synthorg/invocation"] == str(invocation.id)
    assert _text(done) == "approved\n"
    assert Invocation.objects.filter(agent=client.agent).count() == 1


def test_an_approval_given_while_the_call_waits_answers_with_the_result(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:

    client = make_agent(autonomy="locked")
    operator = person_create(username="mcp-live-operator", role="operator", password=None)

    def approve_when_asked() -> None:
        try:
            asked = ApprovalRequest.objects.filter(invocation__agent=client.agent, status="pending")
            wait_until(asked.exists, timeout=60, what="the call's approval request")
            approval_decide(request=asked.get(), person=operator, decision="approve")
        finally:
            connection.close()

    async def work(session: Any) -> Any:
        call = asyncio.ensure_future(session.call_tool("test_echo", {"text": "worth the wait"}))
        await asyncio.to_thread(approve_when_asked)
        return await call

    result = with_mcp(daphne_server, client.token, work)
    assert result.is_error is False, _text(result)
    assert _text(result) == "worth the wait\n"
    invocation = Invocation.objects.get(id=result.meta["synthorg/invocation"])
    assert invocation.status == "succeeded"
    assert invocation.approval.status == "approved"


def test_a_client_on_the_newest_protocol_lists_and_calls_the_same_way(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent(denied=["test_counter"])

    async def main() -> tuple[str, Any, Any, Any]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {client.token}"})
        transport = streamable_http_client(daphne_server + "/mcp/", http_client=http)
        async with http, Client(transport, mode="auto") as mcp:
            listed = await mcp.list_tools()
            echoed = await mcp.call_tool("test_echo", {"text": "newest"})
            denied = await mcp.call_tool("test_counter", {"seconds": 0})
            return mcp.protocol_version, listed, echoed, denied

    version, listed, echoed, denied = run_fresh(main)
    assert version in MODERN_PROTOCOL_VERSIONS
    rest = client.http.get("/api/v1/tools/").json()["tools"]
    assert [t.name for t in listed.tools] == [t["name"] for t in rest]
    assert echoed.is_error is False and _text(echoed) == "newest\n"
    assert denied.is_error is True and _text(denied).startswith("denied: ")
    assert AuditEvent.objects.filter(
        agent_id=client.agent.id, kind="invocation.decided", outcome="deny"
    ).exists()


def test_a_malformed_meta_field_is_an_error_and_nothing_is_submitted(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent()

    async def work(session: Any) -> Any:
        return await session.call_tool("test_echo", {"text": "x"}, meta={"synthorg/wait": "soon"})

    result = with_mcp(daphne_server, client.token, work)
    assert result.is_error is True
    assert "synthorg/wait must be an integer" in _text(result)
    assert not Invocation.objects.filter(agent=client.agent).exists()
