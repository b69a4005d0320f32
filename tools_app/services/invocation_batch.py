"""A batch of calls (seed 000's invoke_all): each call on its own, at most N running at once
(its members wait in their agent's line, held also by the batch's own limit)."""

from __future__ import annotations

import uuid

import structlog

from common.errors import InternalError, SynthOrgError
from tools_app.models import Invocation
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
    return [
        Invocation.objects.select_related("approval").get(id=e.id)
        if isinstance(e, Invocation)
        else e
        for e in entries
    ]
