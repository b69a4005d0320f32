"""approval_decide: one person approves or denies one pending request.

Single use and bound: the request's row is locked, it must still be pending and
unexpired, the decision must name the arguments hash the request was made for,
each person decides once, a request needing two approvals needs two distinct
people, and the agent's own owner is refused where the rule bars self-approval.
A denial needs a reason; the agent reads it in the invocation's error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from approvals_app.events import approval_change_on_commit
from approvals_app.models import ApprovalDecision, ApprovalRequest, ApprovalStatus, Verdict
from approvals_app.services.expiry import settle_expiry
from approvals_app.services.grants import GrantSpec, approval_grant_create
from approvals_app.services.redecide import (
    VerdictReads,
    approval_verdict_now,
    request_withdraw,
)
from approvals_app.services.settle import (
    audit_settlement,
    close_request,
    refuse_invocation,
    release_invocation,
)
from audit_app.record import Actor
from common.errors import ConflictError, ForbiddenError, InvalidArgumentError, NotFoundError
from common.inbox import ApprovalChange
from common.roles import ROLES_THAT_DECIDE, has_any_role
from common.team_scope import DECIDE
from tools_app.models import InvocationStatus
from trust_app.selectors.teams import person_scope

DECISIONS = ("approve", "deny")
REASON_MAX = 2000


@dataclass(frozen=True)
class Decided:
    """The request after the decision; ``settled`` when this decision closed it."""

    request: ApprovalRequest
    settled: bool


@dataclass(frozen=True)
class Refusal:
    error: type[ConflictError] | type[ForbiddenError]
    message: str
    details: dict[str, Any]


def check_person(person: Any) -> None:
    if person is None or not getattr(person, "is_authenticated", False):
        raise ForbiddenError("only a signed-in person can decide an approval")
    if not has_any_role(person, ROLES_THAT_DECIDE):
        raise ForbiddenError("deciding approvals needs the operators or admins role")


def already_settled(request: ApprovalRequest) -> Refusal:
    if request.verdict == Verdict.WITHDRAWN:
        return Refusal(
            ConflictError,
            f"this request was withdrawn: the current policy refuses the call "
            f"({request.verdict_reason}); nobody can approve it",
            {"status": "withdrawn", "decided_by": request.decided_by},
        )
    who = request.decided_by or "someone"
    verb = {"approved": "approved", "denied": "denied", "expired": "expired"}.get(
        request.status, request.status
    )
    message = (
        f"this request already expired ({who})"
        if request.status == ApprovalStatus.EXPIRED
        else f"this request was already {verb} by {who}"
    )
    return Refusal(ConflictError, message, {"status": request.status, "decided_by": who})


def standing_refusal(
    request: ApprovalRequest,
    person: Any,
    *,
    decision: str,
    arguments_hash: str | None,
    now: Any,
    decided_before: Callable[[], bool],
    reads: VerdictReads | None = None,
) -> Refusal | None:
    """The checks every decision of a locked request passes, in order; None when it may
    be recorded. An expired request is settled on the way, and one the current policy
    refuses is withdrawn (an approval is decided again first)."""
    invocation = request.invocation
    if not request.owner_may_approve and invocation.agent.owner_id == person.pk:
        return Refusal(
            ForbiddenError,
            f"you own agent {invocation.agent.name}; another operator must decide its calls",
            {},
        )
    if request.status != ApprovalStatus.PENDING:
        return already_settled(request)
    if request.expires_at <= now:
        settle_expiry(request, now)
        return already_settled(request)
    if arguments_hash is not None and arguments_hash != request.arguments_hash:
        return Refusal(
            ConflictError,
            "the decision names other arguments than the request holds; reload and decide again",
            {"arguments_hash": request.arguments_hash},
        )
    if invocation.arguments_hash != request.arguments_hash:
        return Refusal(ConflictError, "the call's arguments changed; it cannot be approved", {})
    if decision == "approve":
        # Decided again first: a change whose re-decision has not run yet is not approved past.
        found = approval_verdict_now(invocation, invocation.agent, reads)
        if found.verdict == Verdict.WITHDRAWN and request_withdraw(
            request, found=found, cause="the policy changed since it was asked",
            actor=Actor.system("approvals"),
        ):  # fmt: skip
            return already_settled(request)
    if decided_before():
        return Refusal(
            ConflictError,
            "you already approved this request; it needs another person's approval",
            {"status": request.status},
        )
    return None


@transaction.atomic
def _decide_locked(
    *,
    request_id: Any,
    person: Any,
    decision: str,
    reason: str,
    arguments_hash: str | None,
    remember: GrantSpec | None,
) -> Decided | Refusal:
    request = (
        ApprovalRequest.objects.select_for_update(of=("self",))
        .select_related("invocation", "invocation__agent")
        .filter(id=request_id)
        .first()
    )
    if request is None or not person_scope(person, DECIDE).admits(request.invocation.agent.team_id):
        # Another team's request is told apart from no request by nothing, not even its id.
        raise NotFoundError(f"no approval request {request_id} among your teams' requests")
    invocation = request.invocation
    name = person.get_username()
    now = timezone.now()
    refusal = standing_refusal(
        request, person, decision=decision, arguments_hash=arguments_hash, now=now,
        decided_before=lambda: request.decisions.filter(person=person).exists(),
    )  # fmt: skip
    if refusal is not None:
        return refusal
    if remember is not None and (decision != "approve" or request.required_approvals > 1):
        raise InvalidArgumentError("approve and remember applies to approvals by one person only")
    actor = Actor.person(person)
    ApprovalDecision.objects.create(
        request=request,
        person=person,
        person_name=name,
        decision=decision,
        reason=reason,
        arguments_hash=request.arguments_hash,
    )
    if decision == "deny":
        message = f"denied by {name}: {reason}"
        refuse_invocation(
            invocation, status=InvocationStatus.DENIED, code="denied", message=message
        )
        close_request(request, status=ApprovalStatus.DENIED, decided_by=name, now=now)
        audit_settlement(
            request, kind="approval.denied", actor=actor, outcome="deny", reason=reason
        )
        return Decided(request, True)

    approvers = list(
        request.decisions.filter(decision="approve")
        .order_by("created_at")
        .values_list("person_name", flat=True)
    )
    request.approvals = len(approvers)
    if request.approvals < request.required_approvals:
        request.save(update_fields=["approvals", "updated_at"])
        approval_change_on_commit(request.id, ApprovalChange.UPDATED)
        audit_settlement(
            request,
            kind="approval.approval_recorded",
            actor=actor,
            outcome="approve",
            reason=f"{request.approvals} of {request.required_approvals} approvals",
        )
        return Decided(request, False)
    if not release_invocation(invocation):
        close_request(request, status=ApprovalStatus.CANCELLED, decided_by="the agent", now=now)
        return Refusal(ConflictError, "the agent withdrew this call", {"status": "cancelled"})
    close_request(
        request,
        status=ApprovalStatus.APPROVED,
        decided_by=", ".join(approvers),
        now=now,
        approvals=request.approvals,
    )
    audit_settlement(
        request, kind="approval.approved", actor=actor, outcome="approve", reason=reason
    )
    if remember is not None:
        approval_grant_create(
            agent=invocation.agent,
            tool=invocation.tool,
            person=person,
            spec=remember,
            arguments_hash=request.arguments_hash,
            source_request=request,
        )
    return Decided(request, True)


def approval_decide(
    *,
    request: ApprovalRequest | Any,
    person: Any,
    decision: str,
    reason: str = "",
    arguments_hash: str | None = None,
    remember: GrantSpec | None = None,
) -> Decided:
    """Approve or deny ``request`` as ``person``; raise a SynthOrgError when refused.

    ``request`` is a request or its id. 409 when it is already settled or expired
    (naming who settled it), 403 for people who may not decide it.
    """
    check_person(person)
    if decision not in DECISIONS:
        raise InvalidArgumentError("decision must be 'approve' or 'deny'")
    reason = (reason or "").strip()[:REASON_MAX]
    if decision == "deny" and not reason:
        raise InvalidArgumentError(
            "a denial needs a reason: the agent is told it", details={"field": "reason"}
        )
    request_id = request.id if isinstance(request, ApprovalRequest) else request
    outcome = _decide_locked(
        request_id=request_id,
        person=person,
        decision=decision,
        reason=reason,
        arguments_hash=arguments_hash,
        remember=remember,
    )
    if isinstance(outcome, Refusal):
        raise outcome.error(outcome.message, details=outcome.details)
    return outcome
