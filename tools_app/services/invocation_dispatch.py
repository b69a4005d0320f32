"""The one owner of each side effect of an invocation's state, so no caller forgets one.

- ``invocation_dispatch_on_commit``: a call that is ``queued`` (by submit, an approval, a
  grant, a retry or a batch slot) goes to its sandbox backend's queue once the caller's
  transaction commits, and only then.
- ``invocation_settled``: a call that reached a terminal state counts in the settled-calls
  metric and, when its end says something about the agent, as trust evidence.
"""

from __future__ import annotations

import contextlib
import functools
from datetime import datetime

import structlog
from celery import current_app
from django.db import DatabaseError, transaction

from common.platform.metrics.instruments import call_settled
from common.vocabulary.categories import ToolCategory
from tools_app.builtin.desktop.placement import placement_queue
from tools_app.models import Invocation, InvocationStatus
from trust_app.services.evidence import trust_invocation_outcome_note

# The worker's task (tools_app.tasks.execute_invocation), sent by name: the task module
# imports the services that run a call, so the services never import it back.
EXECUTE_TASK = "tools_app.execute_invocation"
QUEUED = InvocationStatus.QUEUED
DESKTOP = ToolCategory.DESKTOP.value
# What sending a call reads of it (a partial load names these).
DISPATCH_FIELDS = ("id", "queue", "category", "agent_id")
log = structlog.get_logger("synthorg.dispatch")


def enqueue_invocation(invocation: Invocation) -> None:
    """Send the call to the queue of its sandbox backend."""
    # No result is kept (the database holds the outcome): telling Celery so skips its
    # result backend, which it would otherwise build once per sending thread.
    queue = invocation.queue
    if invocation.category == DESKTOP:
        # A desktop call goes where the agent's session stands, if one does.
        queue = placement_queue(str(invocation.agent_id)) or queue
    current_app.send_task(EXECUTE_TASK, args=[str(invocation.id)], queue=queue, ignore_result=True)


def _enqueue_committed(invocation: Invocation) -> None:
    """Send a committed call; a broker that is away leaves it for the dispatch sweep.

    The call is recorded whatever happens here (the caller's answer says so): the
    database, not the broker, says what must run. A failed send clears the call's
    ``dispatched_at``, and the sweep sends it again as soon as it runs.
    """
    try:
        enqueue_invocation(invocation)
    except Exception as exc:
        log.warning("invocation_dispatch_deferred", invocation=str(invocation.id), error=str(exc))
        with contextlib.suppress(DatabaseError):
            Invocation.objects.filter(id=invocation.id, status=QUEUED, held=False).update(
                dispatched_at=None
            )


def invocation_dispatch_on_commit(invocation: Invocation) -> None:
    """Send the queued call to its queue after the caller's commit (nothing on rollback)."""
    transaction.on_commit(functools.partial(_enqueue_committed, invocation))


def invocation_settled(
    *, invocation: Invocation, status: str, at: datetime | None = None, evidence: bool = True
) -> None:
    """What every terminal state brings, in the caller's transaction.

    ``evidence`` is False where the end is a person's or the console's act rather than the
    agent's call ending (cancelled, or refused or expired while it waited for a person):
    those count in the metric and are not trust evidence.
    """
    if evidence and at is not None:
        trust_invocation_outcome_note(invocation=invocation, status=status, at=at)
    # Counted once the state is committed: a rolled-back settlement never shows.
    transaction.on_commit(
        functools.partial(
            call_settled, tool=invocation.tool, status=status, created_at=invocation.created_at
        )
    )
