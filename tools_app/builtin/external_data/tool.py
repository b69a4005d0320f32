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
  floor the approval rules cannot lower).

Every request the worker makes or refuses at run time is audited
(``external_data.request``: connection, operation, method, path, status, bytes).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final
from urllib.parse import quote, quote_plus, urlencode

from django.db import transaction

from audit_app.record import Actor, audit_record
from common.config import SynthOrgConfig
from common.config.connections import (
    CONNECTION_METHODS,
    Connection,
    ConnectionOperation,
    parse_grant,
)
from common.settings_config import synthorg_config
from common.vocabulary.categories import SafetyClass, ToolCategory
from common.vocabulary.sealing import Injection, parse_injection
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.external_data.connection import connection_credential, connection_guard
from tools_app.builtin.external_data.limits import connection_rate_hit, connection_slot
from tools_app.builtin.external_data.paths import (
    PathRefusedError,
    checked_segments,
    matching_operation,
)
from tools_app.builtin.web.policy import refusal
from tools_app.contracts import ToolContract, ToolExample
from tools_app.net import (
    EgressDeadlineError,
    EgressError,
    EgressRequestFailedError,
    FetchLimits,
    FetchResponse,
    fetch,
)
from trust_app.models import Agent
from trust_app.policy import Decision, Outcome

TOOL_NAME: Final = "external_data_request"
AUDIT_KIND: Final = "external_data.request"
RULE_NOT_GRANTED: Final = "connection_not_granted"
RULE_OPERATION: Final = "connection_operation"
RULE_ASKS: Final = "connection_operation_approval"
REDACTED: Final = "[REDACTED]"
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


def granted_connections(sub_constraints: Mapping[str, Any]) -> dict[str, set[str] | None]:
    """``name -> granted operation labels`` (None: every operation) from the agent's
    ``connections`` sub-constraint."""
    granted: dict[str, set[str] | None] = {}
    for entry in sub_constraints.get("connections") or ():
        try:
            name, operation = parse_grant(str(entry))
        except ValueError:
            continue  # refused when the permissions were written; never widens a grant
        if operation is None:
            granted[name] = None
        elif name not in granted or granted[name] is not None:
            operations = granted.get(name) or set()
            operations.add(operation)
            granted[name] = operations
    return granted


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


def _same_param(a: str, b: str) -> bool:
    return a.strip().casefold() == b.strip().casefold()


def _credential_forms(value: str, injection: Injection) -> list[str]:
    """Each spelling of the credential a response might carry back."""
    forms = {value, quote(value, safe=""), quote_plus(value)}
    if injection.kind == "basic":
        pair = f"{injection.name}:{value}" if injection.name else value
        forms.add(base64.b64encode(pair.encode("utf-8")).decode("ascii"))
    return sorted((f for f in forms if f), key=len, reverse=True)


def _masked(text: str, forms: list[str]) -> str:
    for form in forms:
        text = text.replace(form, REDACTED)
    return text


def _joined_headers(response: FetchResponse, forms: list[str]) -> dict[str, str]:
    joined: dict[str, str] = {}
    for name, value in response.headers:
        value = _masked(value, forms)
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    return joined


def _body_value(response: FetchResponse, text: str) -> Any:
    content_type = next((v for k, v in response.headers if k.lower() == "content-type"), "").lower()
    if not response.truncated and ("json" in content_type.split(";")[0]):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


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
        """Check the call again, take the connection's limits, send it and mask the answer."""
        started = time.monotonic()
        if context.sub_constraints.get("network") not in ("allowlist_only", "open"):
            raise ToolRefusedError(
                RefusalCode.HOST_NOT_ALLOWED,
                f"network access is not permitted for agent {context.agent_name}",
            )
        call = resolve_call(synthorg_config().connections, context.sub_constraints, arguments)
        connection = call.connection
        url, injection, credential = self._target(context, call, arguments)
        forms = _credential_forms(credential, injection) if credential else []
        body, content_type = self._body(arguments.get("body"))
        headers = {"Accept": "application/json, text/plain;q=0.9, */*;q=0.1"}
        if content_type:
            headers["Content-Type"] = content_type
        rate = connection.rate
        if rate is not None:
            wait = connection_rate_hit(connection.name, limit=rate[0], window_seconds=rate[1])
            if wait:
                reason = (
                    f"connection {connection.name} is over its rate limit of "
                    f"{connection.rate_limit} (every agent together); nothing was sent; "
                    f"retry in {wait}s"
                )
                _record(context, call, outcome="rate_limited", reason=reason)
                raise ToolRefusedError(RefusalCode.LIMIT_EXCEEDED, reason)
        with connection_slot(
            connection.name,
            limit=connection.max_concurrency,
            hold_seconds=connection.timeout_seconds,
        ) as taken:
            if not taken:
                reason = (
                    f"connection {connection.name} already has {connection.max_concurrency} "
                    "requests in flight (its concurrency limit, every agent together); nothing "
                    "was sent; retry in a few seconds"
                )
                _record(context, call, outcome="concurrency_limited", reason=reason)
                raise ToolRefusedError(RefusalCode.LIMIT_EXCEEDED, reason)
            response = self._send(context, call, url, headers, body, injection, credential, forms)
        text = _masked(response.text(), forms)
        structured = {
            "status": response.status,
            "headers": _joined_headers(response, forms),
            "body": _body_value(response, text),
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
    def _target(
        context: ToolContext, call: ResolvedCall, arguments: Mapping[str, Any]
    ) -> tuple[str, Injection, str]:
        """The URL to send, the injection and the credential's value ('' without auth)."""
        connection = call.connection
        pairs = _query_pairs(arguments.get("query"))
        injection = parse_injection(connection.auth.scheme if connection.auth else "bearer")
        credential = connection_credential(context, connection, tool=TOOL_NAME)
        if connection.auth is not None and injection.kind == "query":
            # The console's value replaces whatever the call wrote under that name.
            pairs = [p for p in pairs if not _same_param(p[0], injection.name)]
            pairs.append((injection.name, credential))
        url = connection.base_url + call.path
        if pairs:
            url += "?" + urlencode(pairs, quote_via=quote)
        return url, injection, credential

    @staticmethod
    def _body(body: object) -> tuple[bytes | None, str]:
        if body is None:
            return None, ""
        if isinstance(body, str):
            return body.encode("utf-8"), "text/plain; charset=utf-8"
        return json.dumps(body, ensure_ascii=False).encode("utf-8"), "application/json"

    @staticmethod
    def _send(
        context: ToolContext,
        call: ResolvedCall,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        injection: Injection,
        credential: str,
        forms: list[str],
    ) -> FetchResponse:
        connection = call.connection
        host = connection.host_entry
        guard = connection_guard(connection)
        overrides: dict[str, str] = {}
        if credential and injection.kind != "query":
            overrides[injection.header] = injection.header_value(credential)
        home = host.rpartition(":")[0].strip("[]")

        def credential_for(hop_host: str) -> Mapping[str, str]:
            # Only ever the connection's own host (the guard refuses any other anyway).
            return overrides if hop_host == home else {}

        try:
            return fetch(
                guard,
                method=call.method,
                url=url,
                headers=headers,
                body=body,
                limits=FetchLimits(
                    timeout_seconds=connection.timeout_seconds,
                    max_response_bytes=connection.max_response_bytes,
                ),
                header_overrides=credential_for,
            )
        except EgressError as exc:
            refused = refusal(exc)
            reason = _masked(refused.reason, forms)
            _record(context, call, outcome="refused", reason=f"refused: {reason}")
            raise ToolRefusedError(refused.code, reason) from exc
        except EgressDeadlineError as exc:
            message = _masked(exc.message, forms)
            _record(context, call, outcome="timed_out", reason=message)
            raise ToolFailedError(message, code="TIMEOUT", timed_out=True) from exc
        except EgressRequestFailedError as exc:
            message = _masked(exc.message, forms)
            _record(context, call, outcome="failed", reason=message)
            raise ToolFailedError(message, code="REQUEST_FAILED") from exc


external_data_request = ExternalDataRequestTool()

TOOLS: Final = (external_data_request,)
