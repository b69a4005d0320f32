"""invocation_execute: steps 7–10 of a tool call, in a worker.

Claim the call by compare-and-set (queued → running), run the tool in the sandbox of
its category, validate and sanitise the output (raw kept for auditors), and record
the terminal state with its audit row in one transaction. A redelivered task finds
the call taken and stops; one whose worker died settles it (retry only when the tool
is idempotent, otherwise failed with worker_lost): never run twice.
"""

from __future__ import annotations

import copy
import dataclasses
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit_app.record import Actor, AuditEntry, audit_record, audit_record_many
from common.platform.database import database_connections_release, until_database_answers
from common.settings_config import synthorg_config
from secrets_app.broker import GrantedSecret, SecretNotGrantedError, SecretUnavailableError
from secrets_app.redaction import stored_secret_values
from secrets_app.references import SecretReferenceError
from secrets_app.substitution import CallSecrets, call_secrets_resolve
from tools_app.bridge.definitions import CATEGORY as BRIDGE_CATEGORY
from tools_app.bridge.pinning import upstream_standing
from tools_app.builtin.base import CANCELLED_CODE, ToolContext, ToolFailedError, ToolRefusedError
from tools_app.models import Invocation, InvocationStatus
from tools_app.quota.guard import guard_workspace
from tools_app.registry import tool_catalog
from tools_app.representation import invocation_json
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import Owner
from tools_app.sanitize.known import known_secrets_for
from tools_app.sanitize.redaction import redact_counted
from tools_app.secrets import call_known_secrets, call_secrets
from tools_app.services.invocation_admission import agent_line_advance, agent_line_hold
from tools_app.services.invocation_claim import disabled_at_claim, invocation_claim
from tools_app.services.invocation_dispatch import invocation_dispatch_on_commit, invocation_settled
from tools_app.services.invocation_outcome import Settled, settle_outcome, settled_for_agent
from tools_app.services.invocation_state import invocation_transition
from tools_app.services.runnable import RULE_UPSTREAM_HELD
from tools_app.worker.egress import invocation_egress
from tools_app.worker.lease import holder_is_alive, invocation_lease
from tools_app.worker.observed import ObservedSandbox
from tools_app.worker.runtime import sandbox_backends
from trust_app.policy import name_key
from trust_app.selectors.agents import agent_policy

log = structlog.get_logger("synthorg.invocation")

RUNNING = InvocationStatus.RUNNING
# An output schema violation names at most this many problems.
_MAX_SCHEMA_PROBLEMS = 5


def invocation_execute(*, invocation_id: uuid.UUID, worker: str) -> None:
    """Run one queued invocation; safe to call again for the same id."""
    # The claim has nothing else to write beside it: it commits on its own (a
    # transaction around it would only add BEGIN and COMMIT round trips).
    invocation = invocation_claim(invocation_id=invocation_id, worker=worker)
    if invocation is None:
        _settle_redelivery(invocation_id=invocation_id, worker=worker)
        return
    _run_claimed(invocation)


def _settle_redelivery(*, invocation_id: uuid.UUID, worker: str) -> None:
    invocation = Invocation.objects.filter(id=invocation_id).first()
    if invocation is None or invocation.status != RUNNING:
        return  # finished, cancelled or never queued: nothing to do
    if holder_is_alive(invocation_id):
        log.info("invocation_taken", invocation=str(invocation_id))
        return
    invocation_worker_lost(invocation=invocation, worker=worker)


def invocation_worker_lost(*, invocation: Invocation, worker: str) -> None:
    """The worker running this call died: retry an idempotent tool, fail any other."""
    contract = tool_catalog().contract(invocation.tool)
    retry = invocation.attempts < settings.SYNTHORG_INVOCATION_MAX_ATTEMPTS
    if contract is not None and contract.idempotent and retry:
        with transaction.atomic():
            requeued = invocation_transition(
                invocation_id=invocation.id,
                from_statuses=[RUNNING],
                to_status=InvocationStatus.QUEUED,
                worker="",
                dispatched_at=timezone.now(),
            )
            if requeued:
                audit_record(
                    kind="invocation.retried",
                    actor=Actor.system(worker),
                    agent=invocation.agent,
                    invocation_id=invocation.id,
                    tool=invocation.tool,
                    arguments_hash=invocation.arguments_hash,
                    outcome="retried",
                    status=InvocationStatus.QUEUED,
                    reason="its worker died mid-call; the tool is idempotent, so it runs again",
                )
                invocation_dispatch_on_commit(invocation)
        return
    _finish(
        invocation=invocation,
        settled=Settled(
            status=InvocationStatus.FAILED,
            is_error=True,
            error_code="worker_lost",
            error_message=(
                "the worker running this call died before it finished; the tool is not "
                "idempotent, so it was not run again: check its effects before retrying"
            ),
        ),
    )


def _context(
    invocation: Invocation,
    backend: Any,
    sealed: tuple[GrantedSecret, ...] = (),
    audit_entries: list[AuditEntry] | None = None,
) -> ToolContext:
    agent = invocation.agent
    policy = agent_policy(agent)
    tool_settings = synthorg_config().tool_settings(invocation.tool)
    return ToolContext(
        agent_id=str(agent.id),
        agent_name=agent.name,
        workspace=Path(agent.workspace),
        sandbox=backend,
        owner=Owner(agent_id=str(agent.id), task_id=invocation.task_id or None),
        task_id=invocation.task_id or None,
        invocation_id=str(invocation.id),
        settings=tool_settings.model_dump(exclude_none=True),
        sub_constraints=policy.for_category(invocation.category).constraints.model_dump(
            mode="json"
        ),
        egress=invocation_egress(invocation, sealed),
        audit_entries=[] if audit_entries is None else audit_entries,
    )


def _run_claimed(invocation: Invocation) -> None:
    started = time.monotonic()
    secret_values: tuple[str, ...] = ()
    # The lease stays held until the end is recorded: a database that is away while
    # the call finishes delays its record, and is never taken for a dead worker.
    with invocation_lease(invocation.id):
        # Every value stored before this call is known to its redaction.
        stored_secret_values(fresh=True)
        settled = until_database_answers(
            lambda: _refusal_before_running(invocation), what="invocation_prepare"
        )
        if settled is None:
            prepared = until_database_answers(
                lambda: _call_arguments(invocation), what="invocation_prepare"
            )
            if isinstance(prepared, Settled):
                settled = prepared
            else:
                secret_values = prepared.values
                # The sandbox may take minutes: its database connection goes back to
                # the pool meanwhile, so waiting calls hold no connection.
                database_connections_release()
                with call_secrets(secret_values):
                    settled = _run_tool(invocation, prepared.arguments, prepared.sealed)
        if settled.duration_ms is None:
            settled = dataclasses.replace(
                settled, duration_ms=int((time.monotonic() - started) * 1000)
            )
        # The call's secrets stay known until its result is stored.
        with call_secrets(secret_values):
            until_database_answers(
                lambda: _finish(invocation=invocation, settled=settled), what="invocation_finish"
            )


def _call_arguments(invocation: Invocation) -> CallSecrets | Settled:
    """The arguments the tool runs with: `${secret:NAME}` replaced in its secret slots
    (checked again: a grant withdrawn since submission refuses the call here)."""
    try:
        return call_secrets_resolve(
            agent=invocation.agent,
            tool=invocation.tool,
            arguments=invocation.arguments,
            invocation_id=invocation.id,
        )
    except SecretReferenceError as exc:
        code, message = "invalid_argument", exc.reason
    except (SecretNotGrantedError, SecretUnavailableError) as exc:
        code, message = exc.invocation_error, exc.message
    return Settled(
        status=InvocationStatus.FAILED, is_error=True, error_code=code, error_message=message
    )


def _refusal_before_running(invocation: Invocation) -> Settled | None:
    """Why this worker will not run the call at all, if it will not."""
    catalog = tool_catalog()
    tool = catalog.implementation(invocation.tool)
    contract = catalog.contract(invocation.tool)
    if tool is None or contract is None:
        return Settled(
            status=InvocationStatus.FAILED,
            is_error=True,
            error_code="unknown_tool",
            error_message=f"tool {invocation.tool!r} is not available on this worker",
        )
    if name_key(contract.name) in disabled_at_claim(invocation):
        return Settled(
            status=InvocationStatus.FAILED,
            is_error=True,
            error_code="tool_disabled",
            error_message=f"an admin disabled {contract.name} before this call ran; it was not run",
        )
    if contract.category.value == BRIDGE_CATEGORY:
        # Held (or rejected) while the call waited for people or in the queue: not run.
        standing = upstream_standing(contract.name)
        if not standing.available:
            return Settled(
                status=InvocationStatus.FAILED,
                is_error=True,
                error_code=RULE_UPSTREAM_HELD,
                error_message=f"{standing.reason} This call was not run.",
            )
    if contract.definition_hash != invocation.definition_hash:
        return Settled(
            status=InvocationStatus.FAILED,
            is_error=True,
            error_code="definition_changed",
            error_message="the tool's definition changed after this call was decided; "
            "submit the call again",
        )
    return None


def _run_tool(
    invocation: Invocation, arguments: dict[str, Any], sealed: tuple[GrantedSecret, ...] = ()
) -> Settled:
    """The call run, settled; with the audit rows its tool left, however it ended."""
    left: list[AuditEntry] = []
    settled = _run_tool_settled(invocation, arguments, sealed, left)
    return dataclasses.replace(settled, audit=tuple(left)) if left else settled


def _run_tool_settled(
    invocation: Invocation,
    arguments: dict[str, Any],
    sealed: tuple[GrantedSecret, ...],
    left: list[AuditEntry],
) -> Settled:
    catalog = tool_catalog()
    tool = catalog.implementation(invocation.tool)
    contract = catalog.contract(invocation.tool)
    assert tool is not None and contract is not None  # checked by _refusal_before_running
    try:
        backends = sandbox_backends()
        backend = ObservedSandbox(
            guard_workspace(
                backends.for_category(contract.category.value),
                backends.config.workspace_quota,
                backends.config.workspace_lock_wait_seconds,
                quota_entries=backends.config.workspace_quota_entries,
            )
        )
        outcome = tool.run(_context(invocation, backend, sealed, left), arguments)
    except ToolRefusedError as exc:
        return Settled(
            status=InvocationStatus.FAILED,
            is_error=True,
            content=exc.reason,
            raw_content=exc.reason,
            error_code=exc.code.value,
            error_message=exc.reason,
        )
    except ToolFailedError as exc:
        status = InvocationStatus.FAILED
        if exc.timed_out:
            status = InvocationStatus.TIMED_OUT
        elif exc.code == CANCELLED_CODE:
            # Stopped part-way by a cancel that came while it ran (what it said is kept).
            status = InvocationStatus.CANCELLED
        return Settled(
            status=status,
            is_error=True,
            content=exc.message,
            raw_content=exc.message,
            error_code=exc.code,
            error_message=exc.message,
        )
    except SandboxError as exc:
        reason = getattr(exc, "reason", str(exc))
        return Settled(
            status=InvocationStatus.FAILED,
            is_error=True,
            error_code="sandbox_unavailable",
            error_message=f"the {contract.category.value} sandbox cannot run: {reason}",
        )
    except Exception as exc:
        log.exception("tool_crashed", tool=invocation.tool)
        return Settled(
            status=InvocationStatus.FAILED,
            is_error=True,
            error_code="tool_error",
            error_message=f"the tool failed unexpectedly ({exc.__class__.__name__})",
        )
    return settle_outcome(contract=contract, outcome=outcome)


def _without_named_secrets(text: str) -> str:
    known = known_secrets_for(
        call_known_secrets() + stored_secret_values(), settings.SYNTHORG_SECRET_MIN_LENGTH
    )
    return redact_counted(text, known, shapes=False)[0] if known else text


def _settled_fields(settled: Settled, at: datetime) -> dict[str, Any]:
    return {
        "finished_at": at,
        "updated_at": at,
        "is_error": settled.is_error,
        "content": settled.content,
        "raw_content": settled.raw_content,
        "structured": settled.structured,
        "exit_code": settled.exit_code,
        "truncated": settled.truncated,
        "duration_ms": settled.duration_ms,
        "error_code": settled.error_code,
        "error_message": settled.error_message,
    }


def _as_settled(invocation: Invocation, status: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The agent's view of the call once these fields are written (no database read)."""
    view = copy.copy(invocation)
    view.status = status
    for name, value in fields.items():
        setattr(view, name, value)
    return invocation_json(view)


def _finish(*, invocation: Invocation, settled: Settled) -> None:
    finished_at = timezone.now()
    # Every way a call ends (refusals, crashes, a lost worker) reaches the agent clean.
    settled = settled_for_agent(settled)
    if settled.raw_content:
        # Auditors read the raw output: never a named secret's value in it either.
        settled = dataclasses.replace(
            settled, raw_content=_without_named_secrets(settled.raw_content)
        )
    fields = _settled_fields(settled, finished_at)
    with transaction.atomic():
        # The agent's line first (before the call's row), as every writer of the line does.
        line = agent_line_hold(invocation.agent_id)
        done = invocation_transition(
            invocation_id=invocation.id,
            from_statuses=[RUNNING],
            to_status=settled.status,
            announce=_as_settled(invocation, settled.status, fields),
            **fields,
        )
        # Its slot frees (also when the call was cancelled while its sandbox ran): the
        # agent's next waiting call, if any, starts. Nothing joins the line while it is
        # held, so a line with none waiting has nothing to start.
        if line.waiting:
            agent_line_advance(agent=invocation.agent, locked=True)
        # What the tool left for the record (the bridge's upstream call) is written
        # whoever settled the call: it ran.
        left: list[AuditEntry] = [{**entry, "agent": invocation.agent} for entry in settled.audit]
        if not done and left:
            audit_record_many(left)
        if done:
            invocation_settled(invocation=invocation, status=settled.status, at=finished_at)
            # Last: the audit chain's lock is held from here to the commit.
            finished = AuditEntry(
                kind="invocation.finished",
                actor=Actor.system("worker"),
                agent=invocation.agent,
                invocation_id=invocation.id,
                tool=invocation.tool,
                category=invocation.category,
                action_type=invocation.action_type,
                arguments_hash=invocation.arguments_hash,
                outcome=settled.error_code or "ok",
                status=settled.status,
                reason=settled.error_message,
                duration_ms=settled.duration_ms,
                data={"exit_code": settled.exit_code, "truncated": settled.truncated},
            )
            if left:
                audit_record_many([*left, finished])
            else:
                audit_record(**finished)
    if not done:
        # Settled elsewhere while it ran (the sweeper took its worker for dead).
        log.info("invocation_result_discarded", invocation=str(invocation.id))
