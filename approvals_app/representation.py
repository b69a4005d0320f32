"""The JSON shape of an approval request, for the people's API."""

from __future__ import annotations

from typing import Any

from approvals_app.models import ApprovalRequest
from approvals_app.selectors.cards import call_summary, shown_arguments
from secrets_app.substitution import secret_names


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def approval_json(request: ApprovalRequest) -> dict[str, Any]:
    """What is asked and where it stands: the call exactly as it will run (only values the
    console holds as secrets masked), what it does, its risk and why, agent, trace, quorum.

    ``risk_tier`` is the label from what the call does; ``required_approvals`` is the
    policy's own fact and says nothing about risk."""
    invocation = request.invocation
    agent = invocation.agent
    decision = invocation.decision or {}
    return {
        "id": str(request.id),
        "status": request.status,
        "risk_tier": request.risk_tier,
        "risk_reasons": list(request.risk_reasons or []),
        "card": call_summary(invocation),
        # What the call would touch, looked at when it was asked (nothing done):
        # [{"kind": "target" | "egress", "text", "available", "at"}].
        "previews": list(request.previews or []),
        "required_approvals": request.required_approvals,
        "approvals": request.approvals,
        "reason": request.reason,
        "rule": request.rule,
        "trace": decision.get("trace", []),
        "arguments_hash": request.arguments_hash,
        "expires_at": _iso(request.expires_at),
        "created_at": _iso(request.created_at),
        "decided_at": _iso(request.decided_at),
        "decided_by": request.decided_by or None,
        "escalated": request.escalated_at is not None,
        "escalated_at": _iso(request.escalated_at),
        "owner_may_approve": request.owner_may_approve,
        # The policy's answer now, when a change made it differ from when it was asked:
        # "no_ask" (it would run without a person) or "withdrawn" (it refuses the call).
        "verdict_now": (
            {
                "verdict": request.verdict,
                "reason": request.verdict_reason,
                "at": _iso(request.verdict_at),
            }
            if request.verdict
            else None
        ),
        "invocation": {
            "id": str(invocation.id),
            "tool": invocation.tool,
            "category": invocation.category,
            "action_type": invocation.action_type,
            "safety_class": invocation.safety_class,
            "arguments": shown_arguments(invocation),
            # Names of the secrets the call would use; their values never leave the worker.
            "secrets": secret_names(invocation.arguments or {}),
            "status": invocation.status,
            # The agent's own words: a claim, not checked by the console.
            "task_id": invocation.task_id or None,
            "purpose": invocation.purpose or None,
        },
        "agent": {
            "id": str(agent.id),
            "name": agent.name,
            "access_level": agent.access_level,
            "autonomy": agent.autonomy,
            "owner": agent.owner.get_username() if agent.owner else None,
        },
        "decisions": [
            {
                "person": d.person_name,
                "decision": d.decision,
                "reason": d.reason,
                "at": _iso(d.created_at),
            }
            for d in request.decisions.all()
        ],
    }
