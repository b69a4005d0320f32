"""A batch of calls (seed 000's invoke_all): each call on its own, at most N running at once."""

from __future__ import annotations

import uuid

import structlog
from django.db import transaction

from common.errors import InternalError, SynthOrgError
from tools_app.models import Invocation, InvocationStatus
from tools_app.services.invocation_dispatch import invocation_dispatch_on_commit
from tools_app.services.invocation_submit import CallRequest, invocation_submit
from trust_app.models import Agent

log = structlog.get_logger(__name__)


def invocation_batch_submit(
    *, agent: Agent, calls: list[CallRequest], max_concurrency: int | None
) -> list[Invocation | SynthOrgError]:
    """Submit every call; a call refused outright gives its error in its own slot."""
    batch_id = uuid.uuid4()
    entries: list[Invocation | SynthOrgError] = []
    for call in calls:
        try:
            submitted = invocation_submit(
                agent=agent, call=call, batch_id=batch_id, batch_max_concurrency=max_concurrency
            )
            entries.append(submitted.invocation)
        except SynthOrgError as exc:
            entries.append(exc)
        except Exception:
            # One call's failure never aborts the others, and the calls already
            # recorded keep their ids in the answer (its own transaction rolled back).
            log.exception("invocation_batch.call_failed", tool=call.tool[:200])
            entries.append(
                InternalError(
                    "the console failed to record this call (nothing of it was kept); "
                    "retry it, the other calls of the batch are unaffected"
                )
            )
    if max_concurrency is not None:
        batch_release(batch_id=batch_id)
    return [
        Invocation.objects.select_related("approval").get(id=e.id)
        if isinstance(e, Invocation)
        else e
        for e in entries
    ]


def batch_release(*, batch_id: uuid.UUID) -> int:
    """Send held calls of the batch to their queues while it has free slots."""
    released = 0
    with transaction.atomic():
        # Lock the whole batch so two finishing members never release one slot twice.
        members = list(
            Invocation.objects.select_for_update().filter(batch_id=batch_id).order_by("created_at")
        )
        if not members or members[0].batch_max_concurrency is None:
            return 0
        busy = sum(
            1
            for m in members
            if m.status == InvocationStatus.RUNNING
            or (m.status == InvocationStatus.QUEUED and not m.held)
        )
        free = members[0].batch_max_concurrency - busy
        held = [m for m in members if m.status == InvocationStatus.QUEUED and m.held]
        for invocation in held[: max(free, 0)]:
            Invocation.objects.filter(id=invocation.id).update(held=False)
            invocation_dispatch_on_commit(invocation)
            released += 1
    return released
