"""Taking an MCP tools/call and rendering its outcome, each in one trip to a thread.

`call_take` submits the call (or picks up the unfinished invocation a repeat of it
resumes) and records which invocation the JSON-RPC request answers, for
`notifications/cancelled`; `call_outcome` reads the invocation once it is done or the
wait is over, and renders what the client sees.
"""

from __future__ import annotations

import uuid

import mcp_types as types

from tools_app.api.views import _check_rate
from tools_app.mcp.calls import (
    call_answered,
    call_started,
    unfinished_call_kept,
    unfinished_call_taken,
)
from tools_app.mcp.cancel import abandoned_call_withdraw, cancel_reason, cancelled_call_withdraw
from tools_app.mcp.results import invocation_result
from tools_app.models import Invocation
from tools_app.services.invocation_submit import CallRequest, invocation_submit
from trust_app.models import Agent


def _resumed(agent: Agent, call: CallRequest) -> Invocation | None:
    """The unfinished invocation a repeat of an earlier call picks up, if any."""
    if call.idempotency_key:
        return None  # the key finds its invocation in the submission itself
    invocation_id = unfinished_call_taken(
        agent_id=agent.id, tool=call.tool, arguments=call.arguments
    )
    if invocation_id is None:
        return None
    return Invocation.objects.filter(id=invocation_id, agent=agent).first()


def call_take(
    *, agent: Agent, call: CallRequest, rpc_id: str | int | None, invocation_id: uuid.UUID
) -> Invocation:
    """The invocation this call waits for; raises a SynthOrgError when it is refused.

    A new invocation gets `invocation_id` (the caller subscribed to it already).
    """
    _check_rate(agent)
    invocation = _resumed(agent, call)
    if invocation is None:
        invocation = invocation_submit(
            agent=agent, call=call, invocation_id=invocation_id
        ).invocation
    if rpc_id is not None and not invocation.terminal:
        cancelled_first = call_started(
            agent_id=agent.id, request_id=rpc_id, invocation_id=invocation.id
        )
        if cancelled_first:
            # The client's cancel overtook its call: it takes effect now.
            why = cancel_reason(rpc_id, "")
            cancelled_call_withdraw(agent=agent, invocation_id=invocation.id, why=why)
            invocation = Invocation.objects.get(id=invocation.id)
    return invocation


def call_outcome(
    *,
    agent: Agent,
    call: CallRequest,
    rpc_id: str | int | None,
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
    if rpc_id is not None:
        call_answered(agent_id=agent.id, request_id=rpc_id)
    return invocation_result(invocation)
