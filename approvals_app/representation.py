"""The JSON shape of an approval request, for the people's API."""

from __future__ import annotations

from typing import Any

from approvals_app.models import ApprovalRequest
from secrets_app.substitution import secret_names


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def approval_json(request: ApprovalRequest) -> dict[str, Any]:
    """What is asked and where it stands: the call (secrets redacted), agent, trace, quorum."""
    invocation = request.invocation
    agent = invocation.agent
    decision = invocation.decision or {}
    return {
        "id": str(request.id),
        "status": request.status,
        "risk_tier": request.risk_tier,
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
        "invocation": {
            "id": str(invocation.id),
            "tool": invocation.tool,
            "category": invocation.category,
            "action_type": invocation.action_type,
            "safety_class": invocation.safety_class,
            "arguments": invocation.arguments_redacted,
            # Names of the secrets the call would use; their values never leave the worker.
            "secrets": secret_names(invocation.arguments or {}),
            "status": invocation.status,
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
