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

    A call already running in its sandbox is not cancelled: its effect may have
    happened already, and a record never says "cancelled" of a call whose effect ran.
    The cancel is recorded (``cancel_requested_at`` and an audit row), the call runs to
    its end (its time limit bounds it) and keeps its outcome and result.
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
    if previous == InvocationStatus.RUNNING and InvocationStatus.RUNNING in statuses:
        _cancel_requested_while_running(invocation=invocation, actor=actor, why=why)
        return Invocation.objects.select_related("approval").get(id=invocation.id)
    cancelled = invocation_transition(
        invocation_id=invocation.id,
        from_statuses=[s for s in statuses if s != InvocationStatus.RUNNING],
        to_status=InvocationStatus.CANCELLED,
        finished_at=timezone.now(),
        is_error=True,
        error_code="cancelled",
        error_message=f"cancelled by {actor.name}: {why}" if why else f"cancelled by {actor.name}",
    )
    if cancelled:
        invocation_settled(invocation=invocation, status=InvocationStatus.CANCELLED, evidence=False)
        approval_desk().invocation_cancelled(invocation_id=invocation.id)
        _audit(
            invocation,
            kind="invocation.cancelled",
            actor=actor,
            outcome="cancelled",
            status=InvocationStatus.CANCELLED,
            reason=f"cancelled while {previous}: {why}" if why else f"cancelled while {previous}",
        )
        if previous == InvocationStatus.QUEUED:
            # Its slot (or its place in line) frees: the next waiting call starts. A
            # running call's slot frees when its worker is done with the sandbox.
            agent_line_advance(agent=invocation.agent, locked=True)
    return Invocation.objects.select_related("approval").get(id=invocation.id)


def _cancel_requested_while_running(*, invocation: Invocation, actor: Actor, why: str) -> None:
    """Record a cancel that came too late to stop the call (in the caller's transaction)."""
    now = timezone.now()
    first = Invocation.objects.filter(
        id=invocation.id, status=InvocationStatus.RUNNING, cancel_requested_at__isnull=True
    ).update(cancel_requested_at=now, updated_at=now)
    if not first:
        return  # asked before: one record is enough
    _audit(
        invocation,
        kind="invocation.cancel_requested",
        actor=actor,
        outcome="too_late",
        status=InvocationStatus.RUNNING,
        reason=(
            "the call was already running in its sandbox, where its effect may have "
            "happened: it runs to its end and keeps its outcome and result"
            + (f" ({why})" if why else "")
        ),
    )


def _audit(
    invocation: Invocation, *, kind: str, actor: Actor, outcome: str, status: str, reason: str
) -> None:
    """One audit row about this call's cancellation, in the caller's transaction."""
    audit_record(
        kind=kind,
        actor=actor,
        agent=invocation.agent,
        invocation_id=invocation.id,
        tool=invocation.tool,
        category=invocation.category,
        action_type=invocation.action_type,
        arguments_hash=invocation.arguments_hash,
        outcome=outcome,
        status=status,
        reason=reason,
    )
