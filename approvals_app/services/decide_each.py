"""approvals_decide_each: one person's decision on many requests, each decided on its own.

Every request goes through ``approval_decide`` in a transaction of its own, so every rule
holds for each one exactly as for a single decision (the row lock and single use, the
bar on the agent's owner, the quorum of distinct people, expiry) and each is audited on
its own; a request refused leaves the others decided, and the refusal is told by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from approvals_app.events import changes_batched
from approvals_app.models import ApprovalRequest
from approvals_app.selectors.requests import REQUEST_TEAM
from approvals_app.services.decide import DECISIONS, approval_decide
from common.errors import InvalidArgumentError, SynthOrgError
from common.team_scope import DECIDE
from trust_app.selectors.teams import person_scope, team_q


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
    if decision == "deny" and not (reason or "").strip():
        raise InvalidArgumentError(
            "a denial needs a reason: the agents are told it", details={"field": "reason"}
        )
    # Only the person's teams' requests are named: another team's id stays unknown.
    yours = ApprovalRequest.objects.filter(team_q(person_scope(person, DECIDE), REQUEST_TEAM))
    names = {
        str(row[0]): f"{row[1]} by {row[2]}"
        for row in yours.filter(id__in=list(requests)).values_list(
            "id", "invocation__tool", "invocation__agent__name"
        )
    }
    outcomes: list[EachOutcome] = []
    with changes_batched():  # the inboxes hear of them together, each once committed
        for request_id in requests:
            what = names.get(request_id, "")
            try:
                decided = approval_decide(
                    request=request_id, person=person, decision=decision, reason=reason
                )
            except SynthOrgError as exc:
                outcomes.append(
                    EachOutcome(request_id, what, False, False, exc.message, exc.http_status)
                )
                continue
            outcomes.append(EachOutcome(request_id, what, True, decided.settled, ""))
    return outcomes
