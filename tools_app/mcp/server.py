"""The MCP server of the gateway: tools/list and tools/call for one authenticated agent.

The agent was authenticated by the mount before the request reached the SDK; it
travels in the ASGI scope of the HTTP request the SDK hands each handler. A call is
submitted with the same service as `POST /api/v1/invocations/` (decision, approval
routing, idempotency, audit) after the same per-agent rate limit, and waited for on
the channel layer like the REST `wait`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import structlog
from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from common.errors import SynthOrgError
from tools_app.api.views import _check_rate
from tools_app.contracts import ToolContract
from tools_app.events import wait_for_terminal
from tools_app.mcp.results import invocation_result, refusal_result, request_problem_result
from tools_app.models import Invocation, InvocationStatus
from tools_app.registry import tool_catalog
from tools_app.selectors import permitted_tools
from tools_app.services.invocation_submit import CallRequest, invocation_submit
from trust_app.models import Agent
from trust_app.selectors import agent_policy

SERVER_NAME = "synthorg-console"
CALLER_SCOPE_KEY = "synthorg.mcp_caller"

# Optional `_meta` keys of tools/call: the REST body's other fields, with its limits.
META_IDEMPOTENCY_KEY = "synthorg/idempotency_key"
META_TASK_ID = "synthorg/task_id"
META_WAIT = "synthorg/wait"
_MAX_KEY_LENGTH = 200

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class McpCaller:
    """Who sent this MCP request, as the mount authenticated it."""

    agent: Agent
    request_id: str


def _caller(ctx: ServerRequestContext[Any, Any]) -> McpCaller:
    scope = getattr(ctx.request, "scope", None) or {}
    caller = scope.get(CALLER_SCOPE_KEY)
    if not isinstance(caller, McpCaller):
        # The mount authenticates every request; reaching here without a caller is a bug.
        raise MCPError(types.INTERNAL_ERROR, "the request carries no authenticated agent")
    return caller


def _description(contract: ToolContract) -> str:
    """The L1 summary followed by the L2 description."""
    if contract.description:
        return f"{contract.summary}\n\n{contract.description}"
    return contract.summary


def _tool(contract: ToolContract) -> types.Tool:
    # Up to protocol 2025-11-25 an output schema must be an object at its root.
    schema = contract.output_schema
    output_schema = schema if schema.get("type") == "object" else None
    return types.Tool(
        name=contract.name,
        description=_description(contract),
        input_schema=contract.input_schema,
        output_schema=output_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=contract.safety_class.value == "read",
            idempotent_hint=contract.idempotent,
        ),
        _meta={
            "synthorg/category": contract.category.value,
            "synthorg/action_type": contract.resolved_action_type,
            "synthorg/safety_class": contract.safety_class.value,
            "synthorg/cost_tier": contract.cost_tier,
            "synthorg/definition_hash": contract.definition_hash,
        },
    )


def mcp_tools_for(agent: Agent) -> list[types.Tool]:
    """Exactly the tools `GET /api/v1/tools/` lists for this agent, with their schemas."""
    catalog = tool_catalog()
    tools = []
    for entry in permitted_tools(agent_policy(agent)):
        contract = catalog.contract(entry["name"])
        if contract is not None:
            tools.append(_tool(contract))
    return tools


async def _list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    caller = _caller(ctx)
    with structlog.contextvars.bound_contextvars(request_id=caller.request_id):
        tools = await sync_to_async(mcp_tools_for)(caller.agent)
    return types.ListToolsResult(tools=tools)


def _text_meta(meta: Mapping[str, Any], key: str) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > _MAX_KEY_LENGTH:
        raise ValueError(f"_meta.{key} must be a string of 1 to {_MAX_KEY_LENGTH} characters")
    return value


def _wait_meta(meta: Mapping[str, Any]) -> int:
    limit = settings.SYNTHORG_MCP_APPROVAL_WAIT_SECONDS
    value = meta.get(META_WAIT)
    if value is None:
        return limit
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise ValueError(f"_meta.{META_WAIT} must be an integer from 0 to {limit} (seconds)")
    return value


def _status(invocation_id: uuid.UUID) -> str:
    return Invocation.objects.values_list("status", flat=True).get(id=invocation_id)


def _load(invocation_id: uuid.UUID) -> Invocation:
    return Invocation.objects.select_related("approval").get(id=invocation_id)


async def _wait_for(invocation: Invocation, *, approval_wait: int) -> Invocation:
    """Wait on the channel layer until the invocation is terminal.

    A call waiting for a person is waited for at most `approval_wait` seconds; one that
    is queued or running, at most the worker's hard time limit, which is above every
    sandbox timeout.
    """
    if invocation.terminal:
        return invocation

    async def status() -> str:
        return await sync_to_async(_status)(invocation.id)

    await wait_for_terminal(invocation.id, timeout=approval_wait, current_status=status)
    current = await status()
    if current in (InvocationStatus.QUEUED, InvocationStatus.RUNNING):
        await wait_for_terminal(
            invocation.id, timeout=settings.CELERY_TASK_TIME_LIMIT, current_status=status
        )
    return await sync_to_async(_load)(invocation.id)


def _submit(agent: Agent, call: CallRequest) -> Invocation:
    _check_rate(agent)
    return invocation_submit(agent=agent, call=call).invocation


async def _call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    caller = _caller(ctx)
    meta: Mapping[str, Any] = params.meta or {}
    with structlog.contextvars.bound_contextvars(request_id=caller.request_id):
        if len(params.name) > _MAX_KEY_LENGTH:
            return request_problem_result(f"a tool name has at most {_MAX_KEY_LENGTH} characters")
        try:
            call = CallRequest(
                tool=params.name,
                arguments=params.arguments or {},
                idempotency_key=_text_meta(meta, META_IDEMPOTENCY_KEY),
                task_id=_text_meta(meta, META_TASK_ID) or "",
            )
            approval_wait = _wait_meta(meta)
        except ValueError as exc:
            return request_problem_result(str(exc))
        try:
            invocation = await sync_to_async(_submit)(caller.agent, call)
        except SynthOrgError as exc:
            log.info("mcp_call_refused", tool=params.name[:200], code=exc.code)
            return refusal_result(exc)
        invocation = await _wait_for(invocation, approval_wait=approval_wait)
        return await sync_to_async(invocation_result)(invocation)


def gateway_server() -> Server[Any]:
    """The SDK server with the gateway's two handlers."""
    return Server(
        SERVER_NAME,
        version="1",
        instructions=(
            "Tools of the SynthOrg Console. Every call is decided by the console's policy, "
            "may wait for a person's approval, runs in a sandbox and is audited."
        ),
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
    )
