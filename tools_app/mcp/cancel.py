"""How an MCP client withdraws a call: `notifications/cancelled`, or going away.

- `notifications/cancelled` naming a request id cancels that request's invocation if
  it has not finished (waiting for a person, queued or running), like
  `POST /api/v1/invocations/<id>/cancel/`.
- A client that goes away (closes the connection) while its call waits for a person
  withdraws that call: nobody is left to receive the result, so no person should
  approve it. Once a person approved it (queued or running) it runs to its end and
  its outcome is kept.
"""

from __future__ import annotations

import uuid

from audit_app.record import Actor
from tools_app.mcp.calls import call_for_request, cancel_requested
from tools_app.models import Invocation, InvocationStatus
from tools_app.services.invocation_cancel import invocation_cancel
from trust_app.models import Agent

_WHY_MAX_CHARS = 200


def mcp_request_cancel(*, agent: Agent, request_id: str | int, reason: str) -> Invocation | None:
    """Cancel the invocation the agent's request `request_id` is answering.

    Returns that invocation (as it now is), or None when no call of this agent with
    that request id is in flight yet; the call then cancels itself once recorded.
    """
    cancel_requested(agent_id=agent.id, request_id=request_id)
    invocation_id = call_for_request(agent_id=agent.id, request_id=request_id)
    if invocation_id is None:
        return None
    invocation = Invocation.objects.filter(id=invocation_id, agent=agent).first()
    if invocation is None or invocation.terminal:
        return invocation
    return invocation_cancel(
        invocation=invocation, actor=Actor.agent(agent), why=cancel_reason(request_id, reason)
    )


def cancel_reason(request_id: str | int, reason: str) -> str:
    said = f" ({reason[:_WHY_MAX_CHARS]})" if reason else ""
    return f"the MCP client cancelled request {str(request_id)[:_WHY_MAX_CHARS]}{said}"


def cancelled_call_withdraw(*, agent: Agent, invocation_id: uuid.UUID, why: str) -> None:
    """Cancel a call of this agent whose client cancelled it, if it has not finished."""
    invocation = Invocation.objects.filter(id=invocation_id, agent=agent).first()
    if invocation is not None and not invocation.terminal:
        invocation_cancel(invocation=invocation, actor=Actor.agent(agent), why=why)


def abandoned_call_withdraw(*, agent: Agent, invocation_id: uuid.UUID) -> None:
    """Cancel the call if it still waits for a person: its client went away."""
    invocation = Invocation.objects.filter(id=invocation_id, agent=agent).first()
    if invocation is None or invocation.status != InvocationStatus.PENDING_APPROVAL:
        return
    invocation_cancel(
        invocation=invocation,
        actor=Actor.agent(agent),
        why="the MCP client went away while the call waited for a person",
        statuses=(InvocationStatus.PENDING_APPROVAL,),
    )
