"""Consequence previews that need a worker: ``git_push`` runs git in the sandbox.

The request opens with the preview marked as being computed; the worker of the call's
own queue (where its sandbox backend lives) reads what would be pushed, read-only and
without network, and ``approval_preview_record`` stores it on the still-pending
request and tells the inbox. Nothing here pushes, fetches or changes the repository.
"""

from __future__ import annotations

import functools
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import structlog
from celery import current_app
from django.db import transaction
from django.utils import timezone

from approvals_app.events import approval_change_on_commit
from approvals_app.models import ApprovalRequest, ApprovalStatus
from approvals_app.selectors.previews import preview_item
from common.inbox import ApprovalChange
from common.settings_config import synthorg_config
from tools_app.builtin.base import ToolContext, ToolFailedError, ToolRefusedError
from tools_app.builtin.git.remote import push_preview
from tools_app.net import EgressError
from tools_app.sandbox.protocol import Owner

log = structlog.get_logger("synthorg.approvals")

# Sent by name, as the call itself is: the task module imports this one.
PUSH_PREVIEW_TASK: Final = "approvals_app.preview_push"
WORKER_TOOLS: Final = frozenset({"git_push"})
COMPUTING: Final = "being computed by a worker; this card updates when it is done"


def worker_previews_pending(invocation: Any, *, now: datetime) -> list[dict[str, Any]]:
    """The placeholder a worker's preview has until the worker answers."""
    if invocation.tool not in WORKER_TOOLS:
        return []
    return [preview_item("push", COMPUTING, now, available=False, pending=True)]


def worker_previews_on_commit(request: ApprovalRequest) -> None:
    """After the request commits, ask the call's own queue to compute its previews."""
    invocation = request.invocation
    if invocation.tool not in WORKER_TOOLS:
        return
    transaction.on_commit(functools.partial(_send, request.id, invocation.queue))


def _send(request_id: uuid.UUID, queue: str) -> None:
    try:
        current_app.send_task(PUSH_PREVIEW_TASK, args=[str(request_id)], queue=queue)
    except Exception as exc:  # the request stands; its preview says why it is missing
        log.warning("approval_preview_not_sent", request=str(request_id), error=repr(exc))
        approval_preview_record(
            request_id=request_id,
            item=preview_item(
                "push", "no worker could be asked to compute it", timezone.now(), available=False
            ),
        )


def approval_preview_record(*, request_id: uuid.UUID, item: dict[str, Any]) -> bool:
    """Store ``item`` in place of the request's preview of the same kind, while the
    request is pending; the inbox is told. False when the request was settled."""
    with transaction.atomic():
        request = (
            ApprovalRequest.objects.select_for_update()
            .filter(id=request_id, status=ApprovalStatus.PENDING)
            .first()
        )
        if request is None:
            return False
        kept = [p for p in (request.previews or []) if p.get("kind") != item["kind"]]
        request.previews = [*kept, item]
        request.save(update_fields=["previews", "updated_at"])
        approval_change_on_commit(request.id, ApprovalChange.UPDATED)
    return True


def _push_text(invocation: Any, backend: Any) -> tuple[str, bool]:
    from trust_app.selectors.agents import agent_policy

    agent = invocation.agent
    constraints = agent_policy(agent).for_category(invocation.category).constraints
    context = ToolContext(
        agent_id=str(agent.id),
        agent_name=agent.name,
        workspace=Path(agent.workspace),
        sandbox=backend,
        owner=Owner(agent_id=str(agent.id), task_id=invocation.task_id or None),
        task_id=invocation.task_id or None,
        settings=synthorg_config().tool_settings(invocation.tool).model_dump(exclude_none=True),
        sub_constraints=constraints.model_dump(mode="json"),
    )
    try:
        found = push_preview(context, invocation.arguments)
    except (ToolRefusedError, EgressError) as exc:
        return f"the call would be refused: {exc.reason}", False
    except ToolFailedError as exc:
        return f"git could not tell: {exc.message}", False
    where = f"to {found.remote} ({found.url}, resolved to {found.address})"
    if not found.commits:
        return f"no commit the remote-tracking refs lack would be pushed {where}", True
    more = " and more" if found.more else ""
    listed = "; ".join(found.commits)
    count = f"{len(found.commits)}{more}"
    return f"{count} commit(s) would be pushed {where}: {listed}", True


def approval_push_preview(*, request_id: uuid.UUID) -> bool:
    """Compute a ``git_push`` request's preview in this worker and record it."""
    from tools_app.worker.runtime import sandbox_backends

    request = (
        ApprovalRequest.objects.select_related("invocation__agent")
        .filter(id=request_id, status=ApprovalStatus.PENDING)
        .first()
    )
    if request is None:
        return False
    invocation = request.invocation
    try:
        backend = sandbox_backends().for_category(invocation.category)
        text, available = _push_text(invocation, backend)
    except Exception as exc:  # a preview is an aid: its failure is stated, never raised
        log.warning("approval_preview_failed", request=str(request_id), error=repr(exc))
        text, available = f"it could not be computed ({type(exc).__name__})", False
    item = preview_item("push", text, timezone.now(), available=available)
    return approval_preview_record(request_id=request_id, item=item)
