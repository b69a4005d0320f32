"""Consequence previews that need a worker: ``git_push`` and ``git_commit`` run git in
the sandbox.

The request opens with the preview marked as being computed; the worker of the call's
own queue (where its sandbox backend lives) reads what would be pushed or committed,
read-only and without network, and ``approval_preview_record`` stores it on the
still-pending request and tells the inbox. Nothing here pushes, fetches, stages or
changes the repository.
"""

from __future__ import annotations

import functools
import uuid
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
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
from tools_app.builtin.git.commit_preview import CommitPreview, commit_preview
from tools_app.builtin.git.remote import push_preview
from tools_app.net import EgressError
from tools_app.sandbox.protocol import Owner

log = structlog.get_logger("synthorg.approvals")

# Sent by name, as the call itself is: the task module imports this one. Each tool has
# a task of its own, so a worker of an earlier release never takes a kind it lacks.
PUSH_PREVIEW_TASK: Final = "approvals_app.preview_push"
COMMIT_PREVIEW_TASK: Final = "approvals_app.preview_commit"
# tool -> (the preview's kind, the task that computes it)
WORKER_PREVIEWS: Final = MappingProxyType(
    {"git_push": ("push", PUSH_PREVIEW_TASK), "git_commit": ("commit", COMMIT_PREVIEW_TASK)}
)
WORKER_TOOLS: Final = frozenset(WORKER_PREVIEWS)
COMPUTING: Final = "being computed by a worker; this card updates when it is done"
# Lines of a commit's diff kept with the request (the card folds them).
COMMIT_DIFF_LINES: Final = 200
COMMIT_FILES_NAMED: Final = 20


def worker_previews_pending(invocation: Any, *, now: datetime) -> list[dict[str, Any]]:
    """The placeholder a worker's preview has until the worker answers."""
    if invocation.tool not in WORKER_PREVIEWS:
        return []
    kind, _ = WORKER_PREVIEWS[invocation.tool]
    return [preview_item(kind, COMPUTING, now, available=False, pending=True)]


def worker_previews_on_commit(request: ApprovalRequest) -> None:
    """After the request commits, ask the call's own queue to compute its previews."""
    invocation = request.invocation
    if invocation.tool not in WORKER_PREVIEWS:
        return
    kind, task = WORKER_PREVIEWS[invocation.tool]
    transaction.on_commit(functools.partial(_send, request.id, invocation.queue, kind, task))


def _send(request_id: uuid.UUID, queue: str, kind: str, task: str) -> None:
    try:
        current_app.send_task(task, args=[str(request_id)], queue=queue)
    except Exception as exc:  # the request stands; its preview says why it is missing
        log.warning("approval_preview_not_sent", request=str(request_id), error=repr(exc))
        approval_preview_record(
            request_id=request_id,
            item=preview_item(
                kind, "no worker could be asked to compute it", timezone.now(), available=False
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


def _tool_context(invocation: Any, backend: Any) -> ToolContext:
    from trust_app.selectors.agents import agent_policy

    agent = invocation.agent
    constraints = agent_policy(agent).for_category(invocation.category).constraints
    return ToolContext(
        agent_id=str(agent.id),
        agent_name=agent.name,
        workspace=Path(agent.workspace),
        sandbox=backend,
        owner=Owner(agent_id=str(agent.id), task_id=invocation.task_id or None),
        task_id=invocation.task_id or None,
        settings=synthorg_config().tool_settings(invocation.tool).model_dump(exclude_none=True),
        sub_constraints=constraints.model_dump(mode="json"),
    )


Computed = tuple[str, bool, str]


def _push_text(invocation: Any, backend: Any) -> Computed:
    context = _tool_context(invocation, backend)
    try:
        found = push_preview(context, invocation.arguments)
    except (ToolRefusedError, EgressError) as exc:
        return f"the call would be refused: {exc.reason}", False, ""
    except ToolFailedError as exc:
        return f"git could not tell: {exc.message}", False, ""
    where = f"to {found.remote} ({found.url}, resolved to {found.address})"
    if not found.commits:
        return f"no commit the remote-tracking refs lack would be pushed {where}", True, ""
    more = " and more" if found.more else ""
    listed = "; ".join(found.commits)
    count = f"{len(found.commits)}{more}"
    return f"{count} commit(s) would be pushed {where}: {listed}", True, ""


_HOW: Final = {
    "added": "added",
    "modified": "changed",
    "deleted": "deleted",
    "new": "new, not yet tracked",
}


def commit_text(found: CommitPreview) -> tuple[str, str]:
    """The line a person reads about a commit, and the diff shown below it."""
    if not found.files:
        return "nothing would be committed: nothing is staged and the call stages nothing", ""
    named = [
        f"{f.path} ({_HOW[f.how]}{'' if f.staged else ', staged by the call'})"
        for f in found.files[:COMMIT_FILES_NAMED]
    ]
    if len(found.files) > COMMIT_FILES_NAMED:
        named.append(f"and {len(found.files) - COMMIT_FILES_NAMED} more")
    count = len(found.files)
    text = f"{count} file{'' if count == 1 else 's'} would be committed: {'; '.join(named)}"
    detail = "\n".join(found.diff)
    if found.more_lines:
        detail += f"\n… {found.more_lines} more lines of the diff not shown"
    if found.cut:
        detail += "\n… git's output was cut at the sandbox's limit"
    new = [f.path for f in found.files if f.how == "new"]
    if new:
        detail += "\n" + "\n".join(f"new file, added whole: {path}" for path in new)
    return text, detail.strip("\n")


def _commit_text(invocation: Any, backend: Any) -> Computed:
    context = _tool_context(invocation, backend)
    try:
        found = commit_preview(context, invocation.arguments, diff_lines=COMMIT_DIFF_LINES)
    except ToolRefusedError as exc:
        return f"the call would be refused: {exc.reason}", False, ""
    except ToolFailedError as exc:
        return f"git could not tell: {exc.message}", False, ""
    text, detail = commit_text(found)
    return text, True, detail


_COMPUTE: Final = MappingProxyType({"git_push": _push_text, "git_commit": _commit_text})


def approval_worker_preview(*, request_id: uuid.UUID) -> bool:
    """Compute a request's worker preview (``git_push``, ``git_commit``) in this worker
    and record it."""
    from tools_app.worker.runtime import sandbox_backends

    request = (
        ApprovalRequest.objects.select_related("invocation__agent")
        .filter(id=request_id, status=ApprovalStatus.PENDING)
        .first()
    )
    if request is None:
        return False
    invocation = request.invocation
    if invocation.tool not in WORKER_PREVIEWS:
        return False
    kind, _ = WORKER_PREVIEWS[invocation.tool]
    try:
        backend = sandbox_backends().for_category(invocation.category)
        text, available, detail = _COMPUTE[invocation.tool](invocation, backend)
    except Exception as exc:  # a preview is an aid: its failure is stated, never raised
        log.warning("approval_preview_failed", request=str(request_id), error=repr(exc))
        text, available, detail = f"it could not be computed ({type(exc).__name__})", False, ""
    item = preview_item(kind, text, timezone.now(), available=available, detail=detail)
    return approval_preview_record(request_id=request_id, item=item)
