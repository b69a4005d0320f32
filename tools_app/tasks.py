"""Thin Celery tasks: load ids, call services."""

from __future__ import annotations

import socket
import time
import uuid

import structlog
from celery import shared_task
from celery.exceptions import Reject

from common.platform.database import OUTAGE_ERRORS, database_connections_release
from tools_app.services.invocation_dispatch import EXECUTE_TASK

log = structlog.get_logger("synthorg.invocation")
# A message whose call cannot be claimed while the database is away goes back to its
# queue after this pause (it is not acknowledged away).
CLAIM_RETRY_PAUSE_SECONDS = 2.0


@shared_task(name=EXECUTE_TASK, acks_late=True, reject_on_worker_lost=True)
def execute_invocation(invocation_id: str) -> None:
    from tools_app.services.invocation_execute import invocation_execute

    worker = getattr(execute_invocation.request, "hostname", None) or socket.gethostname()
    try:
        invocation_execute(invocation_id=uuid.UUID(invocation_id), worker=worker)
    except OUTAGE_ERRORS as exc:
        # The call was not claimed (a claimed call waits out the outage itself): its
        # message goes back to the queue for another try.
        log.warning("invocation_claim_deferred", invocation=invocation_id, error=str(exc)[:300])
        time.sleep(CLAIM_RETRY_PAUSE_SECONDS)
        raise Reject(str(exc)[:200], requeue=True) from exc
    finally:
        # Threads that wait for the next call hold no database connection.
        database_connections_release()


@shared_task(name="tools_app.sweep_abandoned_invocations", quiet=True)
def sweep_abandoned_invocations() -> int:
    """Settle running calls whose worker died and whose message will not come back."""
    from tools_app.services.invocation_sweep import invocations_abandoned_settle

    return invocations_abandoned_settle()


@shared_task(name="tools_app.sweep_dispatch", quiet=True)
def sweep_dispatch() -> dict[str, int]:
    """Send queued calls the broker lost; start waiting calls whose agent has a free slot."""
    from tools_app.services.invocation_admission import invocations_dispatch_sweep

    return invocations_dispatch_sweep()


@shared_task(name="tools_app.desktop_capture", quiet=True)
def desktop_capture(agent_id: str) -> bool:
    """A fresh picture of the agent's desktop for its page."""
    from tools_app.services.desktop_watch import desktop_capture_store

    try:
        return desktop_capture_store(agent_id=agent_id)
    finally:
        database_connections_release()


@shared_task(name="tools_app.desktop_person_act")
def desktop_person_act(
    agent_id: str, person_id: str, request: dict[str, object], sequence: int | None = None
) -> str:
    """A person's click, typing or keys on the agent's desktop they took over, in order."""
    from tools_app.services.desktop_control import desktop_person_act as act

    try:
        return act(
            agent_id=uuid.UUID(agent_id),
            person_id=int(person_id),
            request=dict(request),
            sequence=None if sequence is None else int(sequence),
        )
    finally:
        database_connections_release()
