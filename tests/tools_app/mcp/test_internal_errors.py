"""A failure inside the console reaches the MCP client as a JSON-RPC internal error
(-32603) that names the request, never the exception's own words (which can name
sockets, paths, hosts or SQL)."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from mcp.shared.exceptions import MCPError

from common.testing import RunningProcess, in_fresh_thread
from tools_app.mcp.server import CALLER_SCOPE_KEY, McpCaller, _call_tool
from trust_app.models import Agent
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.django_db(transaction=True)]


def _context(agent: Agent) -> Any:
    """What the SDK hands the handler: the HTTP request's scope and the JSON-RPC id."""
    caller = McpCaller(agent=agent, request_id="req-internal-1")
    return SimpleNamespace(request=SimpleNamespace(scope={CALLER_SCOPE_KEY: caller}), request_id=5)


def _call(agent: Agent) -> Any:
    meta = {"synthorg/wait": 0}
    params = types.CallToolRequestParams.model_validate(
        {"name": "test_echo", "arguments": {"text": "hi"}, "_meta": meta}, by_name=False
    )

    def call() -> Any:
        # async_to_sync: the handler's database work runs in the calling thread, on
        # that thread's connection, closed before the thread ends.
        try:
            return async_to_sync(_call_tool)(_context(agent), params)
        finally:
            connection.close()

    # a browser test earlier in the session keeps a loop running in the main thread
    return in_fresh_thread(call)


def test_an_internal_failure_is_a_json_rpc_internal_error_without_its_details() -> None:
    # An agent that authenticated and was deleted before its call was recorded: the
    # database refuses the invocation's foreign key.
    ghost = Agent(id=uuid.uuid4(), name=f"ghost-{uuid.uuid4().hex[:8]}", access_level="standard")
    with pytest.raises(MCPError) as raised:
        _call(ghost)
    error = raised.value.error
    assert error.code == types.INTERNAL_ERROR == -32603
    assert "req-internal-1" in error.message and "try again later" in error.message
    for leak in ("IntegrityError", "violates", "foreign key", "/", "Traceback", "psycopg"):
        assert leak not in error.message, error.message


@pytest.mark.integration
def test_the_same_call_of_a_real_agent_is_answered(celery_worker_process: RunningProcess) -> None:
    agent = agent_create(name=f"real-{uuid.uuid4().hex[:8]}", access_level="standard").agent
    result = _call(agent)
    assert isinstance(result, types.CallToolResult)
    assert result.is_error is False, result.content
    assert [getattr(block, "text", None) for block in result.content] == ["hi\n"]
