"""Thin Celery tasks: load ids, call services."""

from __future__ import annotations

import socket
import uuid

from celery import shared_task

from tools_app.services.invocation_dispatch import EXECUTE_TASK


@shared_task(name=EXECUTE_TASK, acks_late=True, reject_on_worker_lost=True)
def execute_invocation(invocation_id: str) -> None:
    from tools_app.services.invocation_execute import invocation_execute

    worker = getattr(execute_invocation.request, "hostname", None) or socket.gethostname()
    invocation_execute(invocation_id=uuid.UUID(invocation_id), worker=worker)


@shared_task(name="tools_app.sweep_abandoned_invocations", quiet=True)
def sweep_abandoned_invocations() -> int:
    """Settle running calls whose worker died and whose message will not come back."""
    from tools_app.services.invocation_sweep import invocations_abandoned_settle

    return invocations_abandoned_settle()
