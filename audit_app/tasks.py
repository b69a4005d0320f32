"""Thin Celery tasks of the record. Their names keep the ``tools_app.`` prefix they were
scheduled and sent under, so beat schedules and messages in flight still find them."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from audit_app.services.verification import VERIFY_TASK


@shared_task(name="tools_app.sweep_abandoned_verifications", quiet=True)
def sweep_abandoned_verifications() -> int:
    """Mark abandoned the audit verifications whose process stopped without a result."""
    from audit_app.services.verification import audit_verifications_abandon

    return audit_verifications_abandon()


@shared_task(name="tools_app.sweep_refusal_summaries", quiet=True)
def sweep_refusal_summaries() -> int:
    """Write the counts of refused requests beyond the per-minute audit budget."""
    from audit_app.refusals import request_refusals_summarise

    return request_refusals_summarise()


@shared_task(name="tools_app.audit_checkpoint", quiet=True)
def audit_checkpoint() -> str | None:
    """Write a signed checkpoint of the audit chain's head outside the database."""
    from audit_app.checkpoint import audit_checkpoint_write

    stored = audit_checkpoint_write()
    return stored.name if stored is not None else None


# On the default queue, not maintenance: a long verification must not hold up the sweeps.
@shared_task(
    name=VERIFY_TASK,
    acks_late=True,
    soft_time_limit=settings.SYNTHORG_AUDIT_VERIFY_TIME_LIMIT,
    time_limit=settings.SYNTHORG_AUDIT_VERIFY_TIME_LIMIT + 30,
)
def verify_audit_chain(verification_id: int) -> None:
    """Verify the audit chain for a person who asked in the console."""
    from audit_app.services.verification import audit_verification_run

    audit_verification_run(verification_id=verification_id)
