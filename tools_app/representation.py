"""The JSON shape of an Invocation, exactly as API.md gives it."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ObjectDoesNotExist

from tools_app.agent_view import decision_text, decision_trace, error_text
from tools_app.models import Invocation, InvocationStatus
from tools_app.selectors.line import queue_place

_RAN = {InvocationStatus.SUCCEEDED, InvocationStatus.FAILED, InvocationStatus.TIMED_OUT}


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _approval(invocation: Invocation) -> dict[str, Any] | None:
    try:
        approval = invocation.approval
    except ObjectDoesNotExist:  # no request: the call never waited for people
        return None
    status = approval.status if approval.status != "cancelled" else "expired"
    return {
        "id": str(approval.id),
        "status": status,
        "expires_at": _iso(approval.expires_at),
        "required_approvals": approval.required_approvals,
        "approvals": approval.approvals,
    }


def _result(invocation: Invocation) -> dict[str, Any] | None:
    # A result exists only when the tool ran and said something.
    if invocation.status not in _RAN or invocation.started_at is None:
        return None
    if invocation.status != InvocationStatus.SUCCEEDED and not (
        invocation.content or invocation.structured or invocation.exit_code is not None
    ):
        return None
    return {
        "is_error": bool(invocation.is_error),
        "content": invocation.content,
        "structured": invocation.structured if invocation.structured is not None else {},
        "exit_code": invocation.exit_code,
        "truncated": invocation.truncated,
        "duration_ms": invocation.duration_ms,
    }


def invocation_json(invocation: Invocation) -> dict[str, Any]:
    """The invocation as its agent sees it. Content and structured results are
    stored sanitised by the worker; reasons, the decision trace and the error
    message (which can quote a person's words or tool output) are sanitised here."""
    decision = invocation.decision or {}
    return {
        "id": str(invocation.id),
        "tool": invocation.tool,
        "arguments_hash": invocation.arguments_hash,
        "status": invocation.status,
        "decision": {
            "outcome": decision.get("outcome"),
            "reason": decision_text(str(decision.get("reason") or "")),
            "rule": decision_text(str(decision.get("rule") or "")),
            "trace": decision_trace(decision.get("trace") or []),
        },
        "approval": _approval(invocation),
        # Beyond its agent's concurrency cap: its place in line (null otherwise).
        "queue": queue_place(invocation),
        "result": _result(invocation),
        "error": (
            {
                "code": invocation.error_code,
                "message": error_text(
                    invocation.error_message, decision_reason=decision.get("reason")
                ),
            }
            if invocation.error_code
            else None
        ),
        "task_id": invocation.task_id or None,
        "purpose": invocation.purpose or None,
        "idempotency_key": invocation.idempotency_key,
        "created_at": _iso(invocation.created_at),
        "updated_at": _iso(invocation.updated_at),
    }
