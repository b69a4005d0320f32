"""Thin Celery tasks: the beat sweeps for expiry and escalation, and the previews of a push
and of a commit."""

from __future__ import annotations

from celery import shared_task


# quiet: it runs every second, so its start is not logged.
@shared_task(name="approvals_app.sweep_expired_approvals", quiet=True)
def sweep_expired_approvals() -> int:
    """Settle approval requests whose time ran out."""
    from approvals_app.services import approvals_expire_due

    return approvals_expire_due()


@shared_task(name="approvals_app.sweep_escalate_approvals", quiet=True)
def sweep_escalate_approvals() -> int:
    """Flag approval requests pending longer than the configured time."""
    from approvals_app.services import approvals_escalate_due

    return approvals_escalate_due()


@shared_task(name="approvals_app.preview_push")
def preview_push(request_id: str) -> bool:
    """Read what a pending ``git_push`` would send, in the worker of its sandbox."""
    import uuid

    from approvals_app.services.previews import approval_worker_preview

    return approval_worker_preview(request_id=uuid.UUID(request_id))


@shared_task(name="approvals_app.preview_commit")
def preview_commit(request_id: str) -> bool:
    """Read what a pending ``git_commit`` would record, in the worker of its sandbox."""
    import uuid

    from approvals_app.services.previews import approval_worker_preview

    return approval_worker_preview(request_id=uuid.UUID(request_id))
