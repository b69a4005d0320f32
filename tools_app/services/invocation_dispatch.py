"""The one owner of each side effect of an invocation's state, so no caller forgets one.

- ``invocation_dispatch_on_commit``: a call that is ``queued`` (by submit, an approval, a
  grant, a retry or a batch slot) goes to its sandbox backend's queue once the caller's
  transaction commits, and only then.
- ``invocation_settled``: a call that reached a terminal state counts in the settled-calls
  metric and, when its end says something about the agent, as trust evidence.
"""

from __future__ import annotations

import functools
from datetime import datetime

from celery import current_app
from django.db import transaction

from common.platform.metrics.instruments import call_settled
from tools_app.models import Invocation
from trust_app.services.evidence import trust_invocation_outcome_note

# The worker's task (tools_app.tasks.execute_invocation), sent by name: the task module
# imports the services that run a call, so the services never import it back.
EXECUTE_TASK = "tools_app.execute_invocation"


def enqueue_invocation(invocation: Invocation) -> None:
    """Send the call to the queue of its sandbox backend."""
    current_app.send_task(EXECUTE_TASK, args=[str(invocation.id)], queue=invocation.queue)


def invocation_dispatch_on_commit(invocation: Invocation) -> None:
    """Send the queued call to its queue after the caller's commit (nothing on rollback)."""
    transaction.on_commit(functools.partial(enqueue_invocation, invocation))


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
