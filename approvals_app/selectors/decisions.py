"""Reads for the operators' own page: the decisions a person made and how each call ended."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from approvals_app.models import ApprovalDecision

# The output an operator sees of each call (what the agent saw, sanitised), cut here.
OUTCOME_PREVIEW_CHARS = 300


@dataclass(frozen=True)
class DecisionOutcome:
    decision: ApprovalDecision
    agent: str
    tool: str
    request_status: str  # approved, denied, expired, …
    call_status: str  # the invocation's status: succeeded, failed, denied, …
    result: str  # the sanitised output (cut), or the error, or "" while it runs
    is_error: bool | None


def decisions_with_outcomes(
    *, person: Any, below: int | None, size: int
) -> tuple[list[DecisionOutcome], int | None]:
    """`person`'s decisions, newest first, `size` at a time below the id `below`,
    with the outcome of the call each decided; and the cursor of the next page."""
    decisions = (
        ApprovalDecision.objects.filter(person=person)
        .select_related("request__invocation__agent")
        .order_by("-id")
    )
    if below is not None:
        decisions = decisions.filter(id__lt=below)
    rows = list(decisions[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    found = []
    for decision in rows:
        invocation = decision.request.invocation
        if invocation.error_code or invocation.error_message:
            result = f"{invocation.error_code}: {invocation.error_message}".strip(": ")
        else:
            result = invocation.content
        if len(result) > OUTCOME_PREVIEW_CHARS:
            result = result[:OUTCOME_PREVIEW_CHARS] + f"… ({len(result):,} characters)"
        found.append(
            DecisionOutcome(
                decision=decision,
                agent=invocation.agent.name,
                tool=invocation.tool,
                request_status=decision.request.status,
                call_status=invocation.status,
                result=result,
                is_error=invocation.is_error,
            )
        )
    return found, (rows[-1].id if more and rows else None)
