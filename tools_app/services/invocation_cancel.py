"""invocation_cancel: an agent withdraws a call that has not finished."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from audit_app.record import Actor, audit_record
from tools_app.approval_desk import approval_desk
from tools_app.models import Invocation, InvocationStatus
from tools_app.services.invocation_admission import agent_line_advance, agent_line_lock
from tools_app.services.invocation_dispatch import invocation_settled
from tools_app.services.invocation_state import invocation_transition

CANCELLABLE = (
    InvocationStatus.PENDING_APPROVAL,
    InvocationStatus.QUEUED,
    InvocationStatus.RUNNING,
)


@transaction.atomic
def invocation_cancel(
    *,
    invocation: Invocation,
    actor: Actor,
    why: str = "",
    statuses: tuple[str, ...] = CANCELLABLE,
) -> Invocation:
    """Cancel the call if it has not finished; a finished call is returned as it is.

    ``why`` (optional) says what asked for the cancellation, for the agent and the audit;
    ``statuses`` narrows which unfinished statuses it may cancel from.

    A running call's result is discarded when it arrives (its worker's final
    compare-and-set finds the call cancelled).
    """
    # The agent's line first (before the call's row), as every writer of the line does.
    agent_line_lock(invocation.agent_id)
    # Locked: a worker's claim cannot move it between this read and the change below.
    previous = (
        Invocation.objects.select_for_update()
        .filter(id=invocation.id)
        .values_list("status", flat=True)
        .first()
    )
    cancelled = invocation_transition(
        invocation_id=invocation.id,
        from_statuses=statuses,
        to_status=InvocationStatus.CANCELLED,
        finished_at=timezone.now(),
        is_error=True,
        error_code="cancelled",
        error_message=f"cancelled by {actor.name}: {why}" if why else f"cancelled by {actor.name}",
    )
    if cancelled:
        invocation_settled(invocation=invocation, status=InvocationStatus.CANCELLED, evidence=False)
        approval_desk().invocation_cancelled(invocation_id=invocation.id)
        audit_record(
            kind="invocation.cancelled",
            actor=actor,
            agent=invocation.agent,
            invocation_id=invocation.id,
            tool=invocation.tool,
            category=invocation.category,
            action_type=invocation.action_type,
            arguments_hash=invocation.arguments_hash,
            outcome="cancelled",
            status=InvocationStatus.CANCELLED,
            reason=f"cancelled while {previous}: {why}" if why else f"cancelled while {previous}",
        )
        if previous == InvocationStatus.QUEUED:
            # Its slot (or its place in line) frees: the next waiting call starts. A
            # running call's slot frees when its worker is done with the sandbox.
            agent_line_advance(agent=invocation.agent)
    return Invocation.objects.select_related("approval").get(id=invocation.id)
