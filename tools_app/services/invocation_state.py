"""Compare-and-set transitions of an invocation: the loser of a race changes nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from common.db_rows import update_if_among
from tools_app.events import publish_invocation_status, publish_invocations_status
from tools_app.models import Invocation


def invocation_transition(
    *,
    invocation_id: uuid.UUID,
    from_statuses: Iterable[str],
    to_status: str,
    announce: Mapping[str, Any] | None = None,
    where: Mapping[str, Any] | None = None,
    **fields: Any,
) -> bool:
    """Move the invocation to `to_status` only if it is in one of `from_statuses` now.

    Returns False (and changes nothing) when another writer got there first. Runs in
    the caller's transaction, which also writes the audit row (a change with no row
    beside it may commit on its own); the live update is sent after commit, carrying
    ``announce`` (the invocation as the agent API renders
    it after this change) when given. ``where`` adds conditions the row must meet too.
    """
    fields.setdefault("updated_at", timezone.now())
    statuses = list(from_statuses)
    values = {"status": to_status, **fields}
    # Every call runs this at least twice: without extra conditions, one statement
    # compiled once (common/db_rows); the ORM otherwise.
    updated = (
        None
        if where
        else update_if_among(
            Invocation, pk=invocation_id, field="status", among=statuses, values=values
        )
    )
    if updated is None:
        updated = (
            Invocation.objects.filter(id=invocation_id, status__in=statuses)
            .filter(**(where or {}))
            .update(**values)
        )
    if updated:
        body = dict(announce) if announce is not None else None
        transaction.on_commit(lambda: publish_invocation_status(invocation_id, to_status, body))
    return bool(updated)


def invocations_transition(
    *,
    invocation_ids: Iterable[uuid.UUID],
    from_statuses: Iterable[str],
    to_status: str,
    **fields: Any,
) -> set[uuid.UUID]:
    """``invocation_transition`` for many calls at once; the ids of those that moved.

    The rows still in one of ``from_statuses`` are locked, then moved in one statement;
    each moved call's waiters hear of it after commit, as for a single transition.
    """
    ids = list(invocation_ids)
    if not ids:
        return set()
    statuses = list(from_statuses)
    moving = set(
        Invocation.objects.select_for_update()
        .filter(id__in=ids, status__in=statuses)
        .values_list("id", flat=True)
    )
    if not moving:
        return moving
    fields.setdefault("updated_at", timezone.now())
    Invocation.objects.filter(id__in=list(moving)).update(status=to_status, **fields)

    transaction.on_commit(lambda: publish_invocations_status(moving, to_status))
    return moving
