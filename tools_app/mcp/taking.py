"""Taking an MCP tools/call and rendering its outcome, each in one trip to a thread.

`call_take` submits the call (or picks up the unfinished invocation a repeat of it
resumes) and records which invocation the JSON-RPC request answers, for
`notifications/cancelled`; `call_outcome` reads the invocation once the wait is over
(when the terminal status message did not carry its result), and renders what the
client sees. The request's record is left to expire: a late cancel finds its
invocation finished and changes nothing.
"""

from __future__ import annotations

import uuid

import mcp_types as types

from tools_app.decision import agent_rate_check
from tools_app.mcp.calls import call_begin, call_started, unfinished_call_kept
from tools_app.mcp.cancel import abandoned_call_withdraw, cancel_reason, cancelled_call_withdraw
from tools_app.mcp.results import invocation_result
from tools_app.models import Invocation
from tools_app.services.invocation_submit import CallRequest, invocation_submit
from trust_app.models import Agent


def call_take(
    *,
    agent: Agent,
    call: CallRequest,
    rpc_id: str | int | None,
    invocation_id: uuid.UUID,
    arrived_at: float,
) -> Invocation:
    """The invocation this call waits for; raises a SynthOrgError when it is refused.

    A new invocation gets `invocation_id` (the caller subscribed to it already); a
    call without an idempotency key that repeats one answered unfinished resumes that
    invocation instead.
    """
    agent_rate_check(agent)
    begun = call_begin(
        agent_id=agent.id, request_id=rpc_id, tool=call.tool, arguments=call.arguments,
        invocation_id=invocation_id, resumable=not call.idempotency_key, arrived_at=arrived_at,
    )  # fmt: skip
    invocation = None
    if begun.resumed is not None:
        invocation = Invocation.objects.filter(id=begun.resumed, agent=agent).first()
        if invocation is not None and rpc_id is not None:
            call_started(agent_id=agent.id, request_id=rpc_id, invocation_id=invocation.id)
    if invocation is None:
        invocation = invocation_submit(
            agent=agent, call=call, invocation_id=invocation_id
        ).invocation
        if invocation.id != invocation_id and rpc_id is not None:  # an idempotency key's
            call_started(agent_id=agent.id, request_id=rpc_id, invocation_id=invocation.id)
    if begun.cancelled_first and not invocation.terminal and rpc_id is not None:
        # The client's cancel overtook its call: it takes effect now.
        why = cancel_reason(rpc_id, "")
        cancelled_call_withdraw(agent=agent, invocation_id=invocation.id, why=why)
        invocation = Invocation.objects.get(id=invocation.id)
    return invocation


def call_outcome(
    *,
    agent: Agent,
    call: CallRequest,
    invocation_id: uuid.UUID,
    client_gone: bool,
) -> types.CallToolResult:
    """What the client is told about the invocation now (a call still waiting for a
    person is withdrawn when its client has gone)."""
    if client_gone:
        abandoned_call_withdraw(agent=agent, invocation_id=invocation_id)
    invocation = Invocation.objects.select_related("approval").get(id=invocation_id)
    if not invocation.terminal:
        unfinished_call_kept(
            agent_id=agent.id, tool=call.tool, arguments=call.arguments, invocation_id=invocation_id
        )
    return invocation_result(invocation)
