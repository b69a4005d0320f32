"""``external_data_request``: one request to a configured connection's API.

The agent names the connection, the method, a path under the connection's base URL,
and optionally query parameters and a body; everything else is the console's:

- the host: the connection's base URL, reached through the SSRF guard
  (``tools_app.net``: address checks, the connection pinned to the checked address,
  redirects followed only to the same host and port, the response size limit applied
  while streaming, one deadline for the whole exchange);
- the operation: the method and path must match one of the connection's operations,
  and the agent must be granted the connection (sub-constraint ``connections``:
  ``name`` or ``name:operation``); otherwise the call is refused when it is decided
  (``gate``) and again before anything is sent;
- the credential: the stored secret named by ``auth.secret``, added as ``auth.scheme``
  says (``common.vocabulary.sealing``), masked in everything that comes back;
- the limits: ``rate_limit`` and ``max_concurrency`` count every agent's requests
  on every worker together; over either, the request is refused (nothing sent) with
  the seconds to wait, never queued;
- approval: a ``write`` or ``sensitive`` operation asks a person (one approval, as a
  floor the approval rules cannot lower);
- redaction: the response fields the connection and operation name by JSON pointer
  (``redact``) are replaced before the result is made, so neither the agent, the stored
  result nor the audit ever holds them.

Each agent is told its own granted connections and operations (``disclosed``): in the
description and as the L3 resource ``connections``.

Every request the worker makes or refuses at run time is audited
(``external_data.request``: connection, operation, method, path, status, bytes).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from django.db import transaction

from audit_app.record import Actor, audit_record
from common.config import SynthOrgConfig
from common.config.connections import (
    CONNECTION_METHODS,
    Connection,
    ConnectionOperation,
)
from common.settings_config import synthorg_config
from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.external_data.disclosure import (
    RESOURCE_ID,
    disclosure_json,
    disclosure_text,
    granted_operations,
)
from tools_app.builtin.external_data.exchange import (
    REDACTED,
    ConnectionAnswer,
    ConnectionCredential,
    connection_exchange,
    connection_url,
)
from tools_app.builtin.external_data.grants import granted_connections
from tools_app.builtin.external_data.paths import (
    PathRefusedError,
    checked_segments,
    matching_operation,
)
from tools_app.builtin.external_data.redaction import redacted
from tools_app.contracts import ToolContract, ToolExample, ToolResource
from trust_app.models import Agent
from trust_app.policy import Decision, Outcome

TOOL_NAME: Final = "external_data_request"
AUDIT_KIND: Final = "external_data.request"
RULE_NOT_GRANTED: Final = "connection_not_granted"
RULE_OPERATION: Final = "connection_operation"
RULE_ASKS: Final = "connection_operation_approval"
MAX_QUERY_PARAMETERS: Final = 64

_SCALAR: Final = {"type": ["string", "number", "integer", "boolean"]}
_ANY_JSON: Final = {"type": ["object", "array", "string", "number", "integer", "boolean", "null"]}


@dataclass(frozen=True, slots=True)
class ResolvedCall:
    """A call checked against the config and the agent's grants."""

    connection: Connection
    operation: ConnectionOperation
    method: str
    path: str


class CallRefusedError(ToolRefusedError):
    """A refusal with the decision rule it is recorded under."""

    def __init__(self, code: RefusalCode, reason: str, rule: str) -> None:
        super().__init__(code, reason)
        self.rule = rule


def resolve_call(
    connections: tuple[Connection, ...],
    sub_constraints: Mapping[str, Any],
    arguments: Mapping[str, Any],
) -> ResolvedCall:
    """The connection and operation of this call; CallRefusedError names what is wrong."""
    name = str(arguments.get("connection", ""))
    granted = granted_connections(sub_constraints)
    connection = next((c for c in connections if c.name == name), None)
    if connection is None or name not in granted:
        shown = ", ".join(sorted(n for n in granted if any(c.name == n for c in connections)))
        raise CallRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            f"connection {name!r} is not granted to this agent (granted: {shown or 'none'}); "
            "ask an admin to grant it",
            RULE_NOT_GRANTED,
        )
    method = str(arguments.get("method", "GET")).upper()
    if method not in CONNECTION_METHODS:
        raise CallRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            f"method must be one of {', '.join(CONNECTION_METHODS)}",
            RULE_OPERATION,
        )
    path = arguments.get("path")
    try:
        segments = checked_segments(path)
    except PathRefusedError as exc:
        raise CallRefusedError(RefusalCode.INVALID_ARGUMENT, str(exc), RULE_OPERATION) from None
    assert isinstance(path, str)
    operation = matching_operation(connection.operations, method, segments)
    if operation is None:
        listed = "; ".join(f"{op.method} {op.path}" for op in connection.operations)
        raise CallRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            f"{method} {path[:200]} matches no operation of connection {name} (its operations: "
            f"{listed}); nothing was sent",
            RULE_OPERATION,
        )
    allowed = granted[name]
    if allowed is not None and operation.label not in allowed:
        raise CallRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            f"operation {operation.label!r} of connection {name} is not granted to this agent "
            f"(granted: {', '.join(sorted(allowed))}); ask an admin to grant it",
            RULE_NOT_GRANTED,
        )
    if method in ("GET", "HEAD") and arguments.get("body") is not None:
        raise CallRefusedError(
            RefusalCode.INVALID_ARGUMENT, f"{method} takes no body", RULE_OPERATION
        )
    return ResolvedCall(connection, operation, method, path)


def operation_words(call: ResolvedCall) -> str:
    """``a write operation`` / ``a sensitive read operation``, for reasons and cards."""
    kind = call.operation.resolved_kind
    return f"a {'sensitive ' if call.operation.sensitive else ''}{kind} operation"


def _query_pairs(query: object) -> list[tuple[str, str]]:
    if query is None:
        return []
    if not isinstance(query, Mapping):
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "query must be an object")
    pairs: list[tuple[str, str]] = []
    for key, value in query.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, bool):
                item = "true" if item else "false"
            pairs.append((str(key), str(item)))
    return pairs


def _redacted_body(answer: ConnectionAnswer, pointers: tuple[str, ...]) -> tuple[Any, str, int]:
    """The body as the agent gets it (JSON parsed when it is JSON), its text, and how many
    fields were redacted. With fields to redact, a body that is not JSON (or was cut)
    cannot be checked, so none of it is given."""
    text = answer.text
    content_type = answer.header("content-type").lower().split(";")[0]
    value: Any = text
    if not answer.response.truncated and "json" in content_type:
        try:
            value = json.loads(text)
        except ValueError:
            value = text
    if not pointers:
        return value, text, 0
    if value is text and text:
        withheld = (
            f"{REDACTED}: the connection redacts fields of this response, and a body that "
            "is not complete JSON cannot be checked, so none of it is shown"
        )
        return withheld, withheld, 1
    value, hidden = redacted(value, pointers)
    return value, json.dumps(value, ensure_ascii=False), hidden


def _record(
    context: ToolContext,
    call: ResolvedCall,
    *,
    outcome: str,
    status: int | None = None,
    sent: int = 0,
    received: int = 0,
    truncated: bool = False,
    reason: str = "",
    redacted: int = 0,
) -> None:
    agent = Agent.objects.get(id=context.agent_id)
    shown_status = "" if status is None else str(status)
    with transaction.atomic():
        audit_record(
            kind=AUDIT_KIND,
            actor=Actor.agent(agent),
            agent=agent,
            invocation_id=context.invocation_uuid,
            tool=TOOL_NAME,
            category=ToolCategory.EXTERNAL_DATA.value,
            action_type="external_data:request",
            outcome=outcome,
            status=shown_status,
            reason=reason
            or f"{call.method} {call.path} on connection {call.connection.name}: "
            f"{outcome}{f' (HTTP {status})' if status is not None else ''}",
            data={
                "connection": call.connection.name,
                "operation": call.operation.label,
                "kind": call.operation.resolved_kind,
                "sensitive": call.operation.sensitive,
                "method": call.method,
                "path": call.path,
                "status": status,
                "bytes_sent": sent,
                "bytes": received,
                "truncated": truncated,
                "redacted_fields": redacted,
            },
        )


class ExternalDataRequestTool:
    """``external_data_request``: one request to a granted connection's operation."""

    contract = ToolContract(
        name=TOOL_NAME,
        category=ToolCategory.EXTERNAL_DATA,
        action_type="external_data:request",
        safety_class=SafetyClass.NETWORK,
        idempotency="required",
        summary="Call an operation of a configured external API connection.",
        description=(
            "Sends one request to a connection an admin configured and granted you. You "
            "give the path under the connection's base URL; the host and the credential are "
            "the console's and never shown to you. The method and path must match one of "
            "the connection's operations. Write and sensitive operations wait for a "
            "person's approval. A JSON response comes back parsed; `truncated` says the "
            "body was cut at the connection's size limit."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "connection": {"type": "string", "minLength": 1, "maxLength": 63},
                "method": {"type": "string", "enum": list(CONNECTION_METHODS), "default": "GET"},
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 2048,
                    "description": "Path under the connection's base URL, starting with '/'.",
                },
                "query": {
                    "type": "object",
                    "maxProperties": MAX_QUERY_PARAMETERS,
                    "additionalProperties": {
                        "anyOf": [_SCALAR, {"type": "array", "items": _SCALAR, "maxItems": 64}]
                    },
                },
                "body": {
                    "description": "A JSON value (sent as application/json) or a string.",
                },
            },
            "required": ["connection", "path"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "status": {"type": "integer"},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "body": _ANY_JSON,
                "truncated": {"type": "boolean"},
            },
            "required": ["status", "headers", "body", "truncated"],
            "additionalProperties": False,
        },
        examples=(
            ToolExample(
                description="Read one invoice from the billing connection.",
                arguments={"connection": "billing", "method": "GET", "path": "/invoices/42"},
                result={"status": 200, "headers": {}, "body": {"id": 42}, "truncated": False},
            ),
        ),
        failure_modes=(
            "HOST_NOT_ALLOWED: the connection or operation is not granted, or the method and "
            "path match no operation of the connection, or a redirect leaves its host.",
            "INVALID_ARGUMENT: the path could leave the base URL ('..', '//', encoded "
            "separators, an absolute URL) or is malformed.",
            "LIMIT_EXCEEDED: the connection's rate or concurrency limit is reached; retry "
            "after the seconds the reason gives.",
        ),
    )

    @staticmethod
    def offered(config: SynthOrgConfig) -> bool:
        """Registered only when the config names at least one connection."""
        return bool(config.connections)

    def disclosed(self, contract: ToolContract, sub_constraints: Mapping[str, Any]) -> ToolContract:
        """The contract as one agent sees it: its granted connections and operations in the
        description, the whole list as the resource ``connections``."""
        granted = granted_operations(synthorg_config().connections, sub_constraints)
        resource = ToolResource(
            id=RESOURCE_ID, media_type="application/json", content=disclosure_json(granted)
        )
        return contract.model_copy(
            update={
                "description": f"{contract.description}\n\n{disclosure_text(granted)}",
                "resources": (*contract.resources, resource),
            }
        )

    def gate(
        self,
        *,
        arguments: Mapping[str, Any],
        sub_constraints: Mapping[str, Any],
        decision: Decision,
    ) -> Decision | None:
        """At decision time: refuse an ungranted connection or operation, or a path that
        escapes; ask a person for a write or sensitive operation."""
        try:
            call = resolve_call(synthorg_config().connections, sub_constraints, arguments)
        except CallRefusedError as exc:
            return Decision(
                Outcome.DENY, exc.reason, exc.rule, (*decision.trace, f"{exc.rule}: deny")
            )
        line = (
            f"connection {call.connection.name}: {call.method} {call.path} is "
            f"{operation_words(call)} ({call.operation.label})"
        )
        if not call.operation.asks_a_person:
            return replace(decision, trace=(*decision.trace, line))
        trace = (*decision.trace, f"{line}: a person decides")
        if decision.outcome is Outcome.REQUIRE_APPROVAL:
            return replace(
                decision,
                reason=f"{decision.reason}; {line}",
                trace=trace,
                required_approvals=max(decision.required_approvals, 1),
            )
        return Decision(
            Outcome.REQUIRE_APPROVAL,
            f"{line}, which needs a person's approval; the call waits for an operator's decision",
            RULE_ASKS,
            trace,
            1,
        )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the call again, take the connection's limits, send it, mask the answer
        and redact the fields the connection names."""
        started = time.monotonic()
        if context.sub_constraints.get("network") not in ("allowlist_only", "open"):
            raise ToolRefusedError(
                RefusalCode.HOST_NOT_ALLOWED,
                f"network access is not permitted for agent {context.agent_name}",
            )
        call = resolve_call(synthorg_config().connections, context.sub_constraints, arguments)
        connection = call.connection
        credential = ConnectionCredential.for_call(context, connection, tool=TOOL_NAME)
        url = connection_url(connection, call.path, _query_pairs(arguments.get("query")))
        body, content_type = self._body(arguments.get("body"))
        headers = {"Accept": "application/json, text/plain;q=0.9, */*;q=0.1"}
        if content_type:
            headers["Content-Type"] = content_type

        def record(outcome: str, reason: str) -> None:
            _record(context, call, outcome=outcome, reason=reason)

        answer = connection_exchange(
            connection,
            credential,
            method=call.method,
            url=url,
            headers=headers,
            body=body,
            record=record,
            agent=context.agent_id,
        )
        response = answer.response
        pointers = connection.redactions(call.operation)
        value, text, hidden = _redacted_body(answer, pointers)
        structured = {
            "status": response.status,
            "headers": answer.headers(),
            "body": value,
            "truncated": response.truncated,
        }
        _record(
            context,
            call,
            outcome="answered",
            status=response.status,
            sent=len(body or b""),
            received=len(response.body),
            truncated=response.truncated,
            redacted=hidden,
        )
        return ToolOutcome(
            content=f"HTTP {response.status} from {connection.name} {call.method} {call.path}"
            f"\n\n{text}",
            structured=structured,
            is_error=response.status >= 400,
            error_code=f"HTTP_{response.status}" if response.status >= 400 else None,
            truncated=response.truncated,
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    @staticmethod
    def _body(body: object) -> tuple[bytes | None, str]:
        if body is None:
            return None, ""
        if isinstance(body, str):
            return body.encode("utf-8"), "text/plain; charset=utf-8"
        return json.dumps(body, ensure_ascii=False).encode("utf-8"), "application/json"


external_data_request = ExternalDataRequestTool()

TOOLS: Final = (external_data_request,)
