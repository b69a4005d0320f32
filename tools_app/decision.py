"""The decision of one call, in order: permission, preflight, rate limits, route, sandbox.

REST, MCP and batches all decide through here, so no door can skip or reorder a step:

1. the agent's own rate limit (``SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE``), before anything
   else is read (``agent_rate_check``);
   then the call's own contract: a tool that resolves its action type per call
   (``ToolContract.for_call``) answers it here, and every later step reads that type; a
   call it cannot place is refused before anyone is asked (a permission denial first);
2. permission and sub-constraints (``trust_app.policy.decide``, PURE);
3. preflight: what the tool's settings refuse whatever people decide;
4. the configured rate windows (``approval.rate_limits``, a tool's ``max_calls_per_minute``);
5. route (``call_route``, inside the caller's transaction): auto-approve, deny, or ask N
   people (approval rules, autonomy, budgets, grants), through the approval desk
   (``tools_app.approval_desk``) that approvals_app registers;
6. a call that would ask people is refused instead when no worker can run its sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from common.errors import RateLimitedError
from common.settings_config import synthorg_config
from tools_app.approval_desk import RateRefusal, RoutedCall, approval_desk
from tools_app.contracts import CallActionTypeError, ToolContract
from tools_app.ratelimit import rate_limit_hit
from tools_app.registry import tool_view
from tools_app.services.runnable import preflight_refusal, sandbox_refusal
from trust_app.models import Agent
from trust_app.policy import Decision, Outcome, decide
from trust_app.selectors.agents import agent_policy


def agent_rate_check(agent: Agent, calls: int = 1) -> None:
    """Count ``calls`` against the agent's per-minute limit; raise when it is over."""
    limit = settings.SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE
    for _ in range(calls):
        wait = rate_limit_hit(f"agent:{agent.id}", limit=limit, window_seconds=60)
        if wait:
            raise RateLimitedError(
                f"agent {agent.name} is over its limit of {limit} calls per minute; "
                f"retry in {wait}s",
                retry_after=wait,
            )


@dataclass(frozen=True)
class CallDecision:
    """Steps 2-4: the decision before routing, or the rate window the call is over, and
    the call's contract (its action type resolved) that routing and the record read."""

    decision: Decision
    contract: ToolContract
    rate_limited: RateRefusal | None = None


def call_contract(
    contract: ToolContract, arguments: Mapping[str, Any]
) -> tuple[ToolContract, CallActionTypeError | None]:
    """The contract of this call, or the declared one and why the call's action type
    cannot be resolved."""
    try:
        return contract.for_call(arguments, synthorg_config()), None
    except CallActionTypeError as exc:
        return contract, exc


def unplaced(decision: Decision, exc: CallActionTypeError | None) -> Decision:
    """``decision``, or the refusal of a call whose action type cannot be resolved. A
    permission denial stands first, so an agent not permitted the tool learns nothing of
    its configured targets."""
    if exc is None or decision.denied:
        return decision
    return Decision(Outcome.DENY, exc.reason, exc.rule, (*decision.trace, f"{exc.rule}: deny"))


def call_decide(
    *, agent: Agent, contract: ToolContract, arguments: Mapping[str, Any]
) -> CallDecision:
    """The call's action type, permission, then preflight, then the rate windows (counted
    only for a call not denied)."""
    contract, unresolved = call_contract(contract, arguments)
    decision = unplaced(decide(agent_policy(agent), tool_view(contract), arguments), unresolved)
    if not decision.denied:
        decision = (
            preflight_refusal(
                contract=contract, arguments=arguments, decision=decision, agent=agent
            )
            or decision
        )
    if not decision.denied:
        limited = approval_desk().rate_limited(agent=agent, contract=contract, arguments=arguments)
        if limited is not None:
            return CallDecision(decision=decision, contract=contract, rate_limited=limited)
    return CallDecision(decision=decision, contract=contract)


def call_route(
    *,
    agent: Agent,
    contract: ToolContract,
    decision: Decision,
    arguments: Mapping[str, Any],
    digest: str,
) -> RoutedCall:
    """Steps 5 and 6, in the caller's transaction: what the call records and whether it asks."""
    routed = approval_desk().route(
        agent=agent, contract=contract, decision=decision, arguments=arguments, digest=digest
    )
    if routed.decision.outcome is Outcome.REQUIRE_APPROVAL:
        refused = sandbox_refusal(contract=contract, decision=routed.decision)
        if refused is not None:
            routed = routed.refused(refused)
    return routed
