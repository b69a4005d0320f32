"""approvals_decide_each: one person's decision on many requests, each decided on its own.

Every request passes the checks a single decision passes (``standing_refusal``: the row
lock and single use, the bar on the agent's owner, the quorum of distinct people,
expiry, the policy decided again) and is audited on its own; a request refused leaves
the others decided, and the refusal is told by id.

The requests are decided a few hundred per transaction, with what they share read and
written once for all of them: the rows locked in one statement, each agent's policy and
grants read once, the decisions, the calls' moves, the requests' closing and their audit
events each written in one statement, each agent's line advanced once. A thousand
pending requests are decided in one person's action.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from django.db import transaction
from django.utils import timezone

from approvals_app.events import approval_change_on_commit, changes_batched
from approvals_app.models import ApprovalDecision, ApprovalRequest, ApprovalStatus
from approvals_app.selectors.requests import REQUEST_TEAM
from approvals_app.services.decide import (
    DECISIONS,
    REASON_MAX,
    Refusal,
    check_person,
    standing_refusal,
)
from approvals_app.services.redecide import VerdictReads
from approvals_app.services.settle import close_requests, settlement_entry
from audit_app.record import Actor, audit_record_many
from common.errors import ForbiddenError, InvalidArgumentError, NotFoundError, SynthOrgError
from common.inbox import ApprovalChange
from common.team_scope import DECIDE
from tools_app.models import Invocation, InvocationStatus
from tools_app.services.invocation_admission import agent_line_advance, agent_line_lock
from tools_app.services.invocation_dispatch import invocation_settled
from tools_app.services.invocation_state import invocations_transition
from trust_app.selectors.teams import person_scope, team_q

# Requests decided per transaction: row locks are held for one chunk only.
CHUNK: Final = 250


@dataclass(frozen=True)
class EachOutcome:
    """What became of one request of a decision on many."""

    request_id: str
    what: str  # "write_file by build-bot"; empty for an id that names no request
    ok: bool
    settled: bool  # this decision closed the request (a quorum may need more people)
    message: str
    status: int = 200  # the HTTP status a single decision would have answered


def approvals_decide_each(
    *, requests: Sequence[str], person: Any, decision: str, reason: str = ""
) -> list[EachOutcome]:
    """Approve or deny each of ``requests`` (ids) as ``person``, in order; the outcome of each.

    The decision and the reason are checked once for all (a denial needs a reason): an
    InvalidArgumentError then, and nothing is decided.
    """
    if decision not in DECISIONS:
        raise InvalidArgumentError("decision must be 'approve' or 'deny'")
    reason = (reason or "").strip()[:REASON_MAX]
    if decision == "deny" and not reason:
        raise InvalidArgumentError(
            "a denial needs a reason: the agents are told it", details={"field": "reason"}
        )
    try:
        check_person(person)
    except ForbiddenError as exc:
        return [
            EachOutcome(str(r), "", False, False, exc.message, exc.http_status) for r in requests
        ]
    outcomes: list[EachOutcome] = []
    with changes_batched():  # the inboxes hear of them together, each once committed
        for start in range(0, len(requests), CHUNK):
            chunk = [str(r) for r in requests[start : start + CHUNK]]
            outcomes.extend(_decide_chunk(chunk, person=person, decision=decision, reason=reason))
    return outcomes


@dataclass
class _Chunk:
    """What one transaction's decisions write together."""

    decisions: list[ApprovalDecision] = field(default_factory=list)
    denied: list[ApprovalRequest] = field(default_factory=list)
    recorded: list[ApprovalRequest] = field(default_factory=list)  # a quorum not reached yet
    approved: list[ApprovalRequest] = field(default_factory=list)
    approvers: dict[Any, list[str]] = field(default_factory=dict)


def _request_id(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def _locked(ids: list[uuid.UUID], person: Any, *, approve: bool) -> dict[Any, ApprovalRequest]:
    """The person's teams' requests among ``ids``, locked; one Agent object per agent.

    Approving moves calls into their agents' lines, so those lines are locked first, as
    every writer of a line does (the agent's row before any invocation's).
    """
    yours = ApprovalRequest.objects.filter(team_q(person_scope(person, DECIDE), REQUEST_TEAM))
    if approve:
        agent_ids = yours.filter(id__in=ids).values_list("invocation__agent_id", flat=True)
        for agent_id in sorted(set(agent_ids), key=str):
            agent_line_lock(agent_id)
    rows = (
        yours.select_for_update(of=("self",))
        .select_related("invocation", "invocation__agent", "invocation__agent__team")
        .filter(id__in=ids)
        .order_by("id")
    )
    agents: dict[Any, Any] = {}
    locked: dict[Any, ApprovalRequest] = {}
    for request in rows:
        # Shared, so each agent's permissions and team are read once for all its requests.
        request.invocation.agent = agents.setdefault(
            request.invocation.agent_id, request.invocation.agent
        )
        locked[request.id] = request
    return locked


@transaction.atomic
def _decide_chunk(
    chunk: list[str], *, person: Any, decision: str, reason: str
) -> list[EachOutcome]:
    now = timezone.now()
    name = person.get_username()
    ids = [_request_id(text) for text in chunk]
    locked = _locked([i for i in ids if i is not None], person, approve=decision == "approve")
    mine = set(
        ApprovalDecision.objects.filter(person=person, request_id__in=list(locked)).values_list(
            "request_id", flat=True
        )
    )
    writes = _Chunk()
    if decision == "approve":
        for decided, approver in (
            ApprovalDecision.objects.filter(request_id__in=list(locked), decision="approve")
            .order_by("created_at")
            .values_list("request_id", "person_name")
        ):
            writes.approvers.setdefault(decided, []).append(approver)
    reads = VerdictReads()
    results: list[EachOutcome | Refusal | None] = []
    for text, request_id in zip(chunk, ids, strict=True):
        request = locked.get(request_id)
        if request is None:
            results.append(EachOutcome(text, "", False, False, *_not_found(text)))
            continue
        refusal = standing_refusal(
            request, person, decision=decision, arguments_hash=None, now=now,
            decided_before=functools.partial(set.__contains__, mine, request.id), reads=reads,
        )  # fmt: skip
        if refusal is not None:
            results.append(refusal)
            continue
        mine.add(request.id)
        writes.decisions.append(
            ApprovalDecision(
                request=request,
                person=person,
                person_name=name,
                decision=decision,
                reason=reason,
                arguments_hash=request.arguments_hash,
            )
        )
        if decision == "deny":
            request.status = ApprovalStatus.DENIED  # a repeated id finds it settled
            request.decided_by = name
            writes.denied.append(request)
        else:
            approvers = writes.approvers.setdefault(request.id, [])
            approvers.append(name)
            request.approvals = len(approvers)
            if request.approvals < request.required_approvals:
                writes.recorded.append(request)
            else:
                request.status = ApprovalStatus.APPROVED
                request.decided_by = ", ".join(approvers)
                writes.approved.append(request)
        results.append(None)
    cancelled = _write(writes, person=person, name=name, reason=reason, now=now)
    return [
        _outcome(text, result, locked.get(request_id), cancelled, writes)
        for text, request_id, result in zip(chunk, ids, results, strict=True)
    ]


def _not_found(text: str) -> tuple[str, int]:
    error = NotFoundError(f"no approval request {text} among your teams' requests")
    return error.message, error.http_status


def _outcome(
    text: str,
    result: EachOutcome | Refusal | None,
    request: ApprovalRequest | None,
    cancelled: set[Any],
    writes: _Chunk,
) -> EachOutcome:
    if isinstance(result, EachOutcome):
        return result
    assert request is not None
    what = f"{request.invocation.tool} by {request.invocation.agent.name}"
    if isinstance(result, Refusal):
        error: SynthOrgError = result.error(result.message, details=result.details)
        return EachOutcome(text, what, False, False, error.message, error.http_status)
    if request.id in cancelled:
        return EachOutcome(text, what, False, False, "the agent withdrew this call", 409)
    return EachOutcome(text, what, True, request not in writes.recorded, "")


def _write(writes: _Chunk, *, person: Any, name: str, reason: str, now: Any) -> set[Any]:
    """Write the chunk's decisions; the requests whose call its agent withdrew meanwhile."""
    ApprovalDecision.objects.bulk_create(writes.decisions)
    actor = Actor.person(person)
    audits: list[tuple[ApprovalRequest, dict[str, Any]]] = []
    if writes.denied:
        message = f"denied by {name}: {reason}"
        moved = invocations_transition(
            invocation_ids=[r.invocation_id for r in writes.denied],
            from_statuses=[InvocationStatus.PENDING_APPROVAL],
            to_status=InvocationStatus.DENIED,
            finished_at=now, is_error=True, error_code="denied", error_message=message,
        )  # fmt: skip
        for request in writes.denied:
            if request.invocation_id in moved:
                invocation_settled(
                    invocation=request.invocation, status=InvocationStatus.DENIED, evidence=False
                )
            audits.append(
                (request, {"kind": "approval.denied", "outcome": "deny", "reason": reason})
            )
        close_requests(writes.denied, status=ApprovalStatus.DENIED, now=now)
    for request in writes.recorded:
        request.save(update_fields=["approvals", "updated_at"])
        approval_change_on_commit(request.id, ApprovalChange.UPDATED)
        audits.append((request, {
            "kind": "approval.approval_recorded", "outcome": "approve",
            "reason": f"{request.approvals} of {request.required_approvals} approvals",
        }))  # fmt: skip
    cancelled: set[Any] = set()
    if writes.approved:
        # Each joins its agent's line, held; the lines advance once each, below.
        moved = invocations_transition(
            invocation_ids=[r.invocation_id for r in writes.approved],
            from_statuses=[InvocationStatus.PENDING_APPROVAL],
            to_status=InvocationStatus.QUEUED,
            held=True,
        )
        withdrawn = [r for r in writes.approved if r.invocation_id not in moved]
        for request in withdrawn:
            cancelled.add(request.id)
            request.decided_by = "the agent"
        close_requests(withdrawn, status=ApprovalStatus.CANCELLED, now=now)
        released = [r for r in writes.approved if r.invocation_id in moved]
        close_requests(released, status=ApprovalStatus.APPROVED, now=now)
        agents: dict[Any, Any] = {}
        for request in released:
            agents[request.invocation.agent_id] = request.invocation.agent
            audits.append(
                (request, {"kind": "approval.approved", "outcome": "approve", "reason": reason})
            )
        for agent in agents.values():
            agent_line_advance(agent=agent, locked=True)
    if audits:
        statuses = dict(
            Invocation.objects.filter(
                id__in=[request.invocation_id for request, _ in audits]
            ).values_list("id", "status")
        )
        audit_record_many(
            [
                settlement_entry(
                    request, actor=actor, status=statuses[request.invocation_id], **what
                )
                for request, what in audits
            ]
        )
    return cancelled
