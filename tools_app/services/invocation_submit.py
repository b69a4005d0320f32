"""invocation_submit: steps 1–6 of a tool call, from the agent's request to the queue.

Authenticate (done by the API), resolve the tool, validate the arguments, decide,
persist the invocation, its approval request and its audit row in one transaction,
and enqueue it after commit. Every refusal is audited and raised with a reason the
agent can act on.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from audit_app.record import Actor, audit_record
from common.canonical import arguments_hash
from common.db_rows import insert_instance
from common.errors import ConflictError, InvalidArgumentError, NotFoundError, RateLimitedError
from common.platform.logs import current_request_id
from common.platform.metrics.instruments import call_decided
from secrets_app.broker import SecretNotGrantedError
from secrets_app.references import SecretReferenceError
from secrets_app.substitution import secret_names, secret_references_check
from tools_app.approval_desk import approval_desk
from tools_app.contracts import ToolContract
from tools_app.decision import call_decide, call_route
from tools_app.models import Invocation, InvocationStatus
from tools_app.registry import backend_for, schema_validator, tool_catalog
from tools_app.sanitize import redact_secrets, redact_structure
from tools_app.sanitize.assignments import SECRET_VALUE
from tools_app.sanitize.credentials import MARKER, marker
from tools_app.sanitize.keys import is_secret_name
from tools_app.sanitize.redaction import only_references
from tools_app.secrets import known_secrets, known_secrets_now
from tools_app.selectors.invocations import disabled_tool_keys
from tools_app.services.invocation_admission import agent_line_advance, invocation_admission
from tools_app.services.invocation_dispatch import invocation_dispatch_on_commit, invocation_settled
from trust_app.models import Agent
from trust_app.policy import Decision, Outcome, name_key

MAX_SCHEMA_ERRORS = 10
# A call's stated purpose, in characters (API.md).
PURPOSE_MAX = 500


@dataclass(frozen=True)
class CallRequest:
    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    idempotency_key: str | None = None
    task_id: str = ""
    # Why the agent says it makes the call: shown to people as its claim. Not part of
    # the call's identity: a retry with the same key and other words is the same call.
    purpose: str = ""


@dataclass(frozen=True)
class Submitted:
    invocation: Invocation
    created: bool


def _refuse(
    *, agent: Agent, call: CallRequest, kind: str, outcome: str, reason: str, **extra: Any
) -> None:
    """Audit a call refused before an invocation exists (its own small transaction)."""
    with transaction.atomic():
        audit_record(
            kind=kind,
            actor=Actor.agent(agent),
            agent=agent,
            tool=call.tool[:200],
            arguments_hash=arguments_hash(call.arguments),
            outcome=outcome,
            reason=reason,
            data={"arguments": _arguments_for_record(call.arguments), **extra},
        )


def _keep_references(given: Any, redacted: Any, known: Sequence[str]) -> Any:
    """`redacted` with each string of `given` made of secret references alone put back
    as written (its stored secrets still redacted): a reference names a secret and is
    not one, though it stands where a secret would (`secret_env`, `Authorization`)."""
    if isinstance(given, str):
        return redact_secrets(given, known) if only_references(given) else redacted
    if isinstance(given, Mapping) and isinstance(redacted, dict):
        for key, item in given.items():
            if key in redacted:
                redacted[key] = _keep_references(item, redacted[key], known)
    elif isinstance(given, list | tuple) and isinstance(redacted, list):
        for index, item in enumerate(given[: len(redacted)]):
            redacted[index] = _keep_references(item, redacted[index], known)
    return redacted


def _arguments_for_record(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A call's arguments as audit rows and people see them: secrets redacted, secret
    references (`${secret:NAME}`) kept as the agent wrote them."""
    # Every stored secret's value too: an agent may write one out literally.
    known = known_secrets_now()
    recorded: dict[str, Any] = redact_structure(dict(arguments), known)
    return dict(_keep_references(dict(arguments), recorded, known))


def _purpose_for_record(purpose: str) -> str:
    """The stated purpose as people see it: a stored secret's value is never shown, even
    in the agent's own words (a redaction mark can be longer than what it hides)."""
    if not purpose:
        return ""
    return redact_secrets(purpose, known_secrets_now())[:PURPOSE_MAX]


_UNSHOWN = marker(SECRET_VALUE)
# A path the redactor would read as a credential's name (`arguments.secret_env`,
# `arguments.headers.Authorization`) followed by `: <value>` is written in backticks,
# so the input shown after it is not taken for the credential assigned to it.
_AUTHORIZATION = re.compile(r"(?i)(?<![A-Za-z0-9_-])(?:proxy-)?authorization$")


def _shown_path(where: str) -> str:
    if is_secret_name(where) or _AUTHORIZATION.search(where):
        return f"`{where}`"
    return where


def _recorded_at(recorded: Any, path: Sequence[Any]) -> Any:
    """The recorded (redacted) value at `path`, or the marker when it cannot be found."""
    for part in path:
        found = (isinstance(recorded, dict) and part in recorded) or (
            isinstance(recorded, list) and isinstance(part, int) and part < len(recorded)
        )
        if not found:
            return _UNSHOWN
        recorded = recorded[part]
    return recorded


def _schema_errors(contract: ToolContract, arguments: Mapping[str, Any]) -> list[str]:
    """One sentence per broken rule of the input schema: the field's path, and the
    agent's input as recorded (a secret value redacted, a reference kept as written)."""
    validator = schema_validator(contract, "input_schema")
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    recorded = _arguments_for_record(arguments) if errors else {}
    known = known_secrets() if errors else []
    messages = []
    for error in errors[:MAX_SCHEMA_ERRORS]:
        where = ".".join(str(p) for p in ("arguments", *error.absolute_path))
        if "propertyNames" in error.schema_path:
            # The input judged is a property's name: a name, shown (stored secrets aside).
            shown: Any = redact_secrets(str(error.instance), known)
        else:
            shown = _recorded_at(recorded, list(error.absolute_path))
        text = repr(error.instance)
        if shown != error.instance and error.message.startswith(text):
            told = shown if isinstance(shown, str) and MARKER.fullmatch(shown) else repr(shown)
            message = told + error.message[len(text) :]
        else:
            message = error.message
        messages.append(f"{_shown_path(where)}: {message}")
    return messages


def _check_secret_references(*, agent: Agent, call: CallRequest, tool: str) -> None:
    """`${secret:NAME}` only in the tool's secret slots, and only names granted to the
    agent for this tool; refused (and audited) before anything is decided or stored."""
    try:
        secret_references_check(agent=agent, tool=tool, arguments=call.arguments)
    except SecretReferenceError as exc:
        _refuse(
            agent=agent, call=call, kind="invocation.refused", outcome="invalid_argument",
            reason=exc.reason, secrets=secret_names(call.arguments),
        )  # fmt: skip
        raise InvalidArgumentError(exc.reason) from exc
    except SecretNotGrantedError as exc:
        _refuse(
            agent=agent, call=call, kind="invocation.refused", outcome="secret_not_granted",
            reason=exc.message, secrets=secret_names(call.arguments),
        )  # fmt: skip
        raise


def _existing(agent: Agent, call: CallRequest, digest: str) -> Submitted | None:
    if not call.idempotency_key:
        return None
    existing = Invocation.objects.filter(agent=agent, idempotency_key=call.idempotency_key).first()
    if existing is None:
        return None
    if name_key(existing.tool) != name_key(call.tool) or existing.arguments_hash != digest:
        raise ConflictError(
            f"idempotency key {call.idempotency_key!r} was already used for another call "
            f"({existing.tool}, invocation {existing.id}); use a new key for a different call",
            details={"invocation": str(existing.id)},
        )
    return Submitted(invocation=existing, created=False)


def invocation_submit(
    *,
    agent: Agent,
    call: CallRequest,
    batch_id: uuid.UUID | None = None,
    batch_max_concurrency: int | None = None,
    invocation_id: uuid.UUID | None = None,
) -> Submitted:
    """Decide on one call and record it; raise a SynthOrgError when it is refused outright.

    ``invocation_id`` lets a caller that will wait subscribe to the new call's
    status messages before the call exists.
    """
    started = time.perf_counter()
    digest = arguments_hash(call.arguments)
    found = _existing(agent, call, digest)
    if found is not None:
        return found

    contract = tool_catalog().contract(call.tool)
    if contract is None or name_key(contract.name) in disabled_tool_keys():
        reason = f"unknown tool {call.tool!r}: GET /api/v1/tools/ lists the tools you may use"
        _refuse(
            agent=agent, call=call, kind="invocation.refused", outcome="unknown_tool", reason=reason
        )
        raise NotFoundError(reason)

    # A missing idempotency key is never a refusal: the invocation's state machine
    # runs a call at most once; a key only makes a client's own retry safe.
    problems = _schema_errors(contract, call.arguments)
    if problems:
        reason = "; ".join(problems)
        _refuse(
            agent=agent, call=call, kind="invocation.refused", outcome="invalid_argument",
            reason=reason, problems=problems,
        )  # fmt: skip
        raise InvalidArgumentError(reason, details={"problems": problems})

    _check_secret_references(agent=agent, call=call, tool=contract.name)

    decided = call_decide(agent=agent, contract=contract, arguments=call.arguments)
    # The call's own contract from here on: its action type as resolved for these arguments.
    decision, limited, contract = decided.decision, decided.rate_limited, decided.contract
    if limited is not None:
        _refuse(
            agent=agent, call=call, kind="invocation.refused", outcome="rate_limited",
            reason=limited.reason, window=limited.window,
        )  # fmt: skip
        raise RateLimitedError(limited.reason, retry_after=limited.retry_after)
    try:
        submitted = _record(
            agent=agent,
            call=call,
            contract=contract,
            decision=decision,
            digest=digest,
            batch_id=batch_id,
            batch_max_concurrency=batch_max_concurrency,
            invocation_id=invocation_id,
        )
    except IntegrityError:
        # Two requests with one idempotency key raced; the loser answers with the winner.
        found = _existing(agent, call, digest)
        if found is None:
            raise
        return found
    _count_decided(submitted, started)
    return submitted


def _count_decided(submitted: Submitted, started: float) -> None:
    invocation = submitted.invocation
    outcome = str((invocation.decision or {}).get("outcome", ""))
    call_decided(tool=invocation.tool, outcome=outcome, seconds=time.perf_counter() - started)


@transaction.atomic
def _record(
    *,
    agent: Agent,
    call: CallRequest,
    contract: ToolContract,
    decision: Decision,
    digest: str,
    batch_id: uuid.UUID | None,
    batch_max_concurrency: int | None,
    invocation_id: uuid.UUID | None,
) -> Submitted:
    # Steps 5 and 6: the route (rules, autonomy, budgets, grants) and the sandbox's
    # standing; what it returns is what the call records.
    routed = call_route(
        agent=agent, contract=contract, decision=decision, arguments=call.arguments, digest=digest
    )
    decision = routed.decision
    status = {
        Outcome.ALLOW: InvocationStatus.QUEUED,
        Outcome.DENY: InvocationStatus.DENIED,
        Outcome.REQUIRE_APPROVAL: InvocationStatus.PENDING_APPROVAL,
    }[decision.outcome]
    backend = backend_for(contract)
    now = timezone.now()
    denied = status == InvocationStatus.DENIED
    # A queued call starts at once when its agent has a free slot and nothing waits
    # before it; otherwise it waits its turn in the agent's line (never refused).
    starts = (
        status == InvocationStatus.QUEUED
        and batch_max_concurrency is None
        and invocation_admission(agent=agent)
    )
    invocation = Invocation(
        id=invocation_id or uuid.uuid4(),
        agent=agent,
        tool=contract.name,
        definition_hash=contract.definition_hash,
        category=contract.category.value,
        action_type=contract.resolved_action_type,
        safety_class=contract.safety_class.value,
        arguments=dict(call.arguments),
        arguments_redacted=_arguments_for_record(call.arguments),
        arguments_hash=digest,
        status=status,
        decision=routed.decision_data(),
        idempotency_key=call.idempotency_key or None,
        task_id=call.task_id,
        purpose=_purpose_for_record(call.purpose),
        batch_id=batch_id,
        batch_max_concurrency=batch_max_concurrency,
        held=status == InvocationStatus.QUEUED and not starts,
        dispatched_at=now if starts else None,
        request_id=current_request_id() or "",
        backend=backend,
        queue=f"sandbox.{backend}",
        finished_at=now if denied else None,
        is_error=True if denied else None,
        error_code="denied" if denied else "",
        error_message=decision.reason if denied else "",
    )
    insert_instance(invocation)
    if status == InvocationStatus.PENDING_APPROVAL:
        approval_desk().request_open(invocation=invocation, routed=routed)
    if denied:
        invocation_settled(invocation=invocation, status=status, at=now)
    if starts:
        invocation_dispatch_on_commit(invocation)
    elif status == InvocationStatus.QUEUED:
        # A batch's call skipped admission: its line is locked here first.
        agent_line_advance(agent=agent, locked=batch_max_concurrency is None)
    # Last: the audit chain's lock is held from here to the commit.
    audit_record(
        kind="invocation.decided",
        actor=Actor.agent(agent),
        agent=agent,
        invocation_id=invocation.id,
        tool=contract.name,
        category=invocation.category,
        action_type=invocation.action_type,
        arguments_hash=digest,
        outcome=decision.outcome.value,
        status=status,
        reason=decision.reason,
        rule=decision.rule,
        data={
            "trace": list(decision.trace),
            "arguments": invocation.arguments_redacted,
            **({"task_id": call.task_id} if call.task_id else {}),
            **({"purpose": invocation.purpose} if invocation.purpose else {}),
        },
    )
    return Submitted(invocation=invocation, created=True)
