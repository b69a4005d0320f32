"""approvals_redecide: pending requests decided again when what they depend on changed.

A request was made against the policy of the moment its call came. When an agent's
level, trust, permissions, secret grants or approval grants change (or a tool's state),
each of its pending requests is decided again by the steps a new call goes through
(permission, the tool's settings, the approval route), reading only: no rate window
counted, no grant used, no budget spent.

- Refused now: the request is withdrawn. The call ends ``denied`` with the code
  ``no_longer_permitted`` and the reason, which reaches the agent (a waiting call answers
  at once); the request is closed (a late approval is a 409 naming why), audited as
  ``approval.withdrawn``, and leaves the operators' inbox live.
- Allowed now without a person: it is never run on that account (nobody decided it);
  the card says the current policy would no longer ask, and a person still decides.
- Still asking: a note left by an earlier change is cleared.

Approving a request decides it again first (``approval_verdict_now``), so a change whose
re-decision has not run yet cannot be approved past.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog
from django.db import transaction
from django.utils import timezone

from approvals_app.events import approval_change_on_commit
from approvals_app.models import ApprovalRequest, ApprovalStatus, Verdict
from approvals_app.policy import GrantView
from approvals_app.services.routing import approval_route_now, live_grant_views
from approvals_app.services.settle import audit_settlement, close_request, refuse_invocation
from audit_app.record import Actor
from common.inbox import ApprovalChange
from secrets_app.broker import SecretNotGrantedError
from secrets_app.references import SecretReferenceError
from secrets_app.substitution import secret_references_check
from tools_app.decision import call_contract, unplaced
from tools_app.models import Invocation, InvocationStatus
from tools_app.registry import tool_catalog, tool_view
from tools_app.selectors.invocations import disabled_tool_keys
from tools_app.services.runnable import preflight_refusal
from trust_app.models import Agent
from trust_app.policy import AgentPolicy, Outcome, decide, name_key
from trust_app.policy_changes import PolicyChange
from trust_app.selectors.agents import agent_policy

# The error code of a call withdrawn because the policy now refuses it.
WITHDRAWN_CODE = "no_longer_permitted"
NO_ASK_WORDS = "the current policy would no longer ask a person for this call"

log = structlog.get_logger("synthorg.approvals")


@dataclass(frozen=True)
class VerdictNow:
    """The policy's answer for a pending call now: ``verdict`` is a ``Verdict`` or ""."""

    verdict: str
    reason: str = ""


@dataclass
class VerdictReads:
    """What deciding many pending calls again in one transaction reads once: the tools
    switched off, each agent's policy and each agent's live grants for a tool."""

    disabled: frozenset[str] | None = None
    policies: dict[Any, AgentPolicy] = field(default_factory=dict)
    grants: dict[tuple[Any, str], Sequence[GrantView]] = field(default_factory=dict)

    def disabled_keys(self) -> frozenset[str]:
        if self.disabled is None:
            self.disabled = disabled_tool_keys()
        return self.disabled

    def policy(self, agent: Agent) -> AgentPolicy:
        if agent.id not in self.policies:
            self.policies[agent.id] = agent_policy(agent)
        return self.policies[agent.id]

    def grant_views(self, agent: Agent, tool: str) -> Callable[[datetime], Sequence[GrantView]]:
        def read(now: datetime) -> Sequence[GrantView]:
            key = (agent.id, tool)
            if key not in self.grants:
                self.grants[key] = list(live_grant_views(agent, tool, now))
            return self.grants[key]

        return read


def approval_verdict_now(
    invocation: Invocation, agent: Agent, reads: VerdictReads | None = None
) -> VerdictNow:
    """Decide ``invocation``'s call again for ``agent`` as it is now, writing nothing.

    ``reads``: shared by the calls decided again in one transaction (read once for all).
    """
    reads = reads or VerdictReads()
    if name_key(invocation.tool) in reads.disabled_keys():
        return VerdictNow(Verdict.WITHDRAWN, f"the tool {invocation.tool} is disabled")
    contract = tool_catalog().contract(invocation.tool)
    if contract is None:
        # Not known to this process (an upstream server not reached yet): the worker
        # checks the call again before it runs; nothing here can judge it.
        return VerdictNow("")
    arguments = invocation.arguments if isinstance(invocation.arguments, dict) else {}
    try:
        secret_references_check(agent=agent, tool=contract.name, arguments=arguments)
    except SecretReferenceError as exc:
        return VerdictNow(Verdict.WITHDRAWN, exc.reason)
    except SecretNotGrantedError as exc:
        return VerdictNow(Verdict.WITHDRAWN, exc.message)
    # The call's own action type (a pipeline's environment, say), as when it was asked.
    contract, unresolved = call_contract(contract, arguments)
    decision = unplaced(decide(reads.policy(agent), tool_view(contract), arguments), unresolved)
    if not decision.denied:
        decision = (
            preflight_refusal(
                contract=contract, arguments=arguments, decision=decision, agent=agent
            )
            or decision
        )
    if decision.denied:
        return VerdictNow(Verdict.WITHDRAWN, decision.reason)
    routed = approval_route_now(
        agent=agent, contract=contract, decision=decision, arguments=arguments,
        digest=invocation.arguments_hash, excluding=invocation.id,
        grants=reads.grant_views(agent, contract.name),
    )  # fmt: skip
    if routed.decision.outcome is Outcome.DENY:
        return VerdictNow(Verdict.WITHDRAWN, routed.decision.reason)
    if routed.decision.outcome is Outcome.ALLOW:
        return VerdictNow(Verdict.NO_ASK, f"{NO_ASK_WORDS} ({routed.decision.reason})")
    return VerdictNow("")


def withdrawn_message(cause: str, reason: str) -> str:
    """What the agent reads of its withdrawn call."""
    return (
        f"withdrawn before anyone decided: {cause}, and the policy now refuses this call: "
        f"{reason}. It was not run."
    )


def request_withdraw(
    request: ApprovalRequest, *, found: VerdictNow, cause: str, actor: Actor
) -> bool:
    """Close the locked pending ``request`` as refused by the current policy."""
    now = timezone.now()
    message = withdrawn_message(cause, found.reason)
    moved = refuse_invocation(
        request.invocation, status=InvocationStatus.DENIED, code=WITHDRAWN_CODE, message=message
    )
    if not moved:
        return False  # the call left pending_approval in between (cancelled by its agent)
    close_request(
        request,
        status=ApprovalStatus.DENIED,
        decided_by=f"withdrawn: {cause}",
        now=now,
        verdict=Verdict.WITHDRAWN,
        verdict_reason=found.reason,
        verdict_at=now,
    )
    audit_settlement(
        request, kind="approval.withdrawn", actor=actor, outcome="withdrawn", reason=message,
        data={"cause": cause, "verdict": Verdict.WITHDRAWN},
    )  # fmt: skip
    return True


def _note(request: ApprovalRequest, found: VerdictNow) -> bool:
    """Keep the current verdict on a request still pending; True when it changed."""
    if (request.verdict, request.verdict_reason) == (found.verdict, found.reason):
        return False
    request.verdict = found.verdict
    request.verdict_reason = found.reason
    request.verdict_at = timezone.now()
    request.save(update_fields=["verdict", "verdict_reason", "verdict_at", "updated_at"])
    approval_change_on_commit(request.id, ApprovalChange.UPDATED)
    return True


@dataclass(frozen=True)
class Redecided:
    withdrawn: int = 0
    no_ask: int = 0
    asking: int = 0


def _pending_ids(agent_ids: Iterable[str] | None) -> list[Any]:
    pending = ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING)
    if agent_ids is not None:
        pending = pending.filter(invocation__agent_id__in=list(agent_ids))
    return list(pending.order_by("created_at").values_list("id", flat=True))


def approvals_redecide(*, agent_ids: Iterable[str] | None, cause: str, actor: Actor) -> Redecided:
    """Decide every pending request of ``agent_ids`` (``None``: of every agent) again.

    Each request in its own transaction under its row lock, so a person deciding one
    meanwhile is never overtaken, and one request's failure leaves the others judged.
    """
    withdrawn = no_ask = asking = 0
    for request_id in _pending_ids(agent_ids):
        try:
            with transaction.atomic():
                request = (
                    ApprovalRequest.objects.select_for_update(of=("self",))
                    .select_related("invocation", "invocation__agent")
                    .filter(id=request_id, status=ApprovalStatus.PENDING)
                    .first()
                )
                if request is None:
                    continue  # decided meanwhile
                invocation = request.invocation
                agent = Agent.objects.get(pk=invocation.agent_id)
                found = approval_verdict_now(invocation, agent)
                if found.verdict == Verdict.WITHDRAWN:
                    if request_withdraw(request, found=found, cause=cause, actor=actor):
                        withdrawn += 1
                    continue
                _note(request, found)
                if found.verdict == Verdict.NO_ASK:
                    no_ask += 1
                else:
                    asking += 1
        except Exception:
            # Approving it decides it again, so a request left here is never approved past.
            log.exception("approval_redecide_failed", request=str(request_id), cause=cause)
    if withdrawn or no_ask:
        log.info(
            "approvals_redecided", cause=cause, withdrawn=withdrawn, no_ask=no_ask, asking=asking
        )
    return Redecided(withdrawn=withdrawn, no_ask=no_ask, asking=asking)


def on_policy_change(change: PolicyChange) -> None:
    """The listener approvals_app registers with trust_app (after each committed change)."""
    approvals_redecide(agent_ids=change.agent_ids, cause=change.cause, actor=change.actor)
