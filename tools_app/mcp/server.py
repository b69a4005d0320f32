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

import anyio
import mcp_types as types
import structlog
from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from common.errors import SynthOrgError
from tools_app.bridge.definitions import CATEGORY as BRIDGE_CATEGORY
from tools_app.bridge.definitions import ServerWords
from tools_app.bridge.selectors import upstream_server_words
from tools_app.contracts import ToolContract
from tools_app.events import carried_body, watch_invocation
from tools_app.mcp.annotations import tool_hints
from tools_app.mcp.calls import unfinished_call_kept
from tools_app.mcp.pictures import shows_picture, with_picture
from tools_app.mcp.results import (
    carried_success_result,
    internal_problem_result,
    refusal_result,
    request_problem_result,
)
from tools_app.mcp.taking import call_outcome, call_take
from tools_app.mcp.waiting import McpExchange, ProgressSink, wait_for_outcome
from tools_app.registry import tool_catalog
from tools_app.selectors.invocations import agent_contract, permitted_tools
from tools_app.services.invocation_submit import PURPOSE_MAX, CallRequest
from trust_app.models import Agent
from trust_app.selectors.agents import agent_policy

SERVER_NAME = "synthorg-console"
CALLER_SCOPE_KEY = "synthorg.mcp_caller"
EXCHANGE_SCOPE_KEY = "synthorg.mcp_exchange"

# Optional `_meta` keys of tools/call: the REST body's other fields, with its limits.
META_IDEMPOTENCY_KEY = "synthorg/idempotency_key"
META_TASK_ID = "synthorg/task_id"
META_PURPOSE = "synthorg/purpose"
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


def _tool(contract: ToolContract, words: ServerWords | None = None) -> types.Tool:
    """``contract`` as tools/list shows it; ``words`` are an upstream tool's server's own
    (its title, its ``openWorldHint: false``), from the definition pinned for it."""
    # Up to protocol 2025-11-25 an output schema must be an object at its root.
    schema = contract.output_schema
    output_schema = schema if schema.get("type") == "object" else None
    words = words or ServerWords()
    hints = tool_hints(
        category=contract.category.value,
        action_type=contract.resolved_action_type,
        safety_class=contract.safety_class.value,
        idempotent=contract.idempotent,
        closed_world_claimed=words.closed_world,
    )
    return types.Tool(
        name=contract.name,
        title=words.title,
        description=_description(contract),
        input_schema=contract.input_schema,
        output_schema=output_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=hints.read_only,
            destructive_hint=hints.destructive,
            idempotent_hint=hints.idempotent,
            open_world_hint=hints.open_world,
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
    policy = agent_policy(agent)
    contracts = [catalog.contract(entry["name"]) for entry in permitted_tools(policy)]
    listed = [agent_contract(policy, c) for c in contracts if c is not None]
    words = upstream_server_words(c.name for c in listed if c.category.value == BRIDGE_CATEGORY)
    return [_tool(contract, words.get(contract.name)) for contract in listed]


async def _list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    caller = _caller(ctx)
    with structlog.contextvars.bound_contextvars(request_id=caller.request_id):
        try:
            tools = await sync_to_async(mcp_tools_for)(caller.agent)
        except Exception as exc:
            log.exception("mcp_list_failed")
            raise MCPError(
                types.INTERNAL_ERROR,
                f"the console could not list the tools (request {caller.request_id}); "
                "try again later",
            ) from exc
    return types.ListToolsResult(tools=tools)


def _text_meta(meta: Mapping[str, Any], key: str) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > _MAX_KEY_LENGTH:
        raise ValueError(f"_meta.{key} must be a string of 1 to {_MAX_KEY_LENGTH} characters")
    return value


def _purpose_meta(meta: Mapping[str, Any]) -> str:
    value = meta.get(META_PURPOSE)
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > PURPOSE_MAX:
        raise ValueError(
            f"_meta.{META_PURPOSE} must be a string of at most {PURPOSE_MAX} characters"
        )
    return value


def _wait_meta(meta: Mapping[str, Any]) -> int:
    limit = settings.SYNTHORG_MCP_APPROVAL_WAIT_SECONDS
    value = meta.get(META_WAIT)
    if value is None:
        return limit
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise ValueError(f"_meta.{META_WAIT} must be an integer from 0 to {limit} (seconds)")
    return value


def _progress_sink(
    ctx: ServerRequestContext[Any, Any], token: str | int | None
) -> ProgressSink | None:
    if token is None or isinstance(token, bool) or not isinstance(token, str | int):
        return None

    async def report(done: float, total: float | None, message: str) -> None:
        await ctx.session.send_progress_notification(
            token, done, total, message, related_request_id=str(ctx.request_id)
        )

    return report


def _exchange(ctx: ServerRequestContext[Any, Any]) -> McpExchange:
    scope = getattr(ctx.request, "scope", None) or {}
    exchange = scope.get(EXCHANGE_SCOPE_KEY)
    return exchange if isinstance(exchange, McpExchange) else McpExchange()


async def _answer(
    ctx: ServerRequestContext[Any, Any],
    caller: McpCaller,
    call: CallRequest,
    approval_wait: int,
    progress: ProgressSink | None,
) -> types.CallToolResult:
    rpc_id = ctx.request_id
    agent = caller.agent
    exchange = _exchange(ctx)
    new_id = uuid.uuid4()
    # Subscribed before the call exists, so no status change can be missed.
    async with watch_invocation(new_id) as watch:
        try:
            invocation = await sync_to_async(call_take)(
                agent=agent, call=call, rpc_id=rpc_id, invocation_id=new_id,
                arrived_at=exchange.arrived_at,
            )  # fmt: skip
        except SynthOrgError as exc:
            log.info("mcp_call_refused", tool=call.tool[:200], code=exc.code)
            return refusal_result(exc, tool=call.tool)
        try:
            ended = await wait_for_outcome(
                invocation,
                approval_wait=approval_wait,
                exchange=exchange,
                progress=progress,
                watch=watch if invocation.id == new_id else None,
            )
        except anyio.get_cancelled_exc_class():
            # The transport cancels the handler when the client goes away.
            with anyio.CancelScope(shield=True):
                await sync_to_async(call_outcome)(
                    agent=agent, call=call, invocation_id=invocation.id, client_gone=True
                )
            raise
        except Exception:
            log.exception("mcp_call_unanswered", invocation=str(invocation.id))
            await sync_to_async(unfinished_call_kept)(
                agent_id=agent.id, tool=call.tool, arguments=call.arguments,
                invocation_id=invocation.id,
            )  # fmt: skip
            return internal_problem_result(invocation.id, caller.request_id)
    result = carried_success_result(carried_body(ended))
    if result is None:  # else the terminal message carried the result: no database read
        result = await sync_to_async(call_outcome)(
            agent=agent, call=call, invocation_id=invocation.id,
            client_gone=exchange.disconnected.is_set(),
        )  # fmt: skip
    if shows_picture(result, call.tool):
        # A file read: off the event loop, and off the one thread for database work.
        result = await sync_to_async(with_picture, thread_sensitive=False)(
            result, tool=call.tool, workspace=agent.workspace
        )
    return result


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
                purpose=_purpose_meta(meta),
            )
            approval_wait = _wait_meta(meta)
        except ValueError as exc:
            return request_problem_result(str(exc))
        progress = _progress_sink(ctx, meta.get("progress_token", meta.get("progressToken")))
        try:
            return await _answer(ctx, caller, call, approval_wait, progress)
        except MCPError:
            raise
        except Exception as exc:
            # Never the exception's own text: it can name sockets, paths or hosts.
            log.exception("mcp_call_failed", tool=params.name[:200])
            raise MCPError(
                types.INTERNAL_ERROR,
                f"the console failed while taking this call of {params.name[:200]} "
                f"(request {caller.request_id}); try again later",
            ) from exc


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
