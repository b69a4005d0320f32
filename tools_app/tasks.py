"""Thin Celery tasks: load ids, call services."""

from __future__ import annotations

import socket
import uuid

from celery import shared_task
from django.conf import settings

from tools_app.models import Invocation


def enqueue_invocation(invocation: Invocation) -> None:
    """Send the call to the queue of its sandbox backend (after commit)."""
    execute_invocation.apply_async(args=[str(invocation.id)], queue=invocation.queue)


@shared_task(name="tools_app.execute_invocation", acks_late=True, reject_on_worker_lost=True)
def execute_invocation(invocation_id: str) -> None:
    from tools_app.services.invocation_execute import invocation_execute

    worker = getattr(execute_invocation.request, "hostname", None) or socket.gethostname()
    invocation_execute(invocation_id=uuid.UUID(invocation_id), worker=worker)


@shared_task(name="tools_app.sweep_abandoned_invocations", quiet=True)
def sweep_abandoned_invocations() -> int:
    """Settle running calls whose worker died and whose message will not come back."""
    from tools_app.services.invocation_sweep import invocations_abandoned_settle

    return invocations_abandoned_settle()


@shared_task(name="tools_app.sweep_abandoned_verifications", quiet=True)
def sweep_abandoned_verifications() -> int:
    """Mark abandoned the audit verifications whose process stopped without a result."""
    from tools_app.services.audit_verification import audit_verifications_abandon

    return audit_verifications_abandon()


@shared_task(name="tools_app.sweep_refusal_summaries", quiet=True)
def sweep_refusal_summaries() -> int:
    """Write the counts of refused requests beyond the per-minute audit budget."""
    from tools_app.services.request_refusal import request_refusals_summarise

    return request_refusals_summarise()


@shared_task(name="tools_app.audit_checkpoint", quiet=True)
def audit_checkpoint() -> str | None:
    """Write a signed checkpoint of the audit chain's head outside the database."""
    from tools_app.audit_checkpoint import audit_checkpoint_write

    stored = audit_checkpoint_write()
    return stored.name if stored is not None else None


# On the default queue, not maintenance: a long verification must not hold up the sweeps.
@shared_task(
    name="tools_app.verify_audit_chain",
    acks_late=True,
    soft_time_limit=settings.SYNTHORG_AUDIT_VERIFY_TIME_LIMIT,
    time_limit=settings.SYNTHORG_AUDIT_VERIFY_TIME_LIMIT + 30,
)
def verify_audit_chain(verification_id: int) -> None:
    """Verify the audit chain for a person who asked in the console."""
    from tools_app.services.audit_verification import audit_verification_run

    audit_verification_run(verification_id=verification_id)
