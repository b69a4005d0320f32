"""``metrics_query``: PromQL against a Prometheus-compatible API, through a connection.

Registered only when ``analytics.metrics.connection`` names a configured connection.
That connection is the whole of the network side, as for ``external_data_request``:
its base URL fixes the host (reached through the SSRF guard, redirects only within
it), its ``auth`` is the credential the console adds (never seen by the agent), its
``rate_limit``, ``max_concurrency`` and ``max_response_bytes`` hold for every agent
together, and the agent must be granted it (``connections`` sub-constraint, the
connection or its ``GET /api/v1/query`` / ``GET /api/v1/query_range`` operation).
A sensitive operation asks a person, decided by ``external_data_request``'s own gate.

The answer is bounded (series, points, label length; ``prometheus.bounded_answer``)
and every query sent, refused or failed is audited (``analytics.metrics_query``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, Final

from django.db import transaction

from audit_app.record import Actor, audit_record
from common.config import SynthOrgConfig
from common.config.analytics import MetricsSection
from common.config.connections import Connection
from common.settings_config import synthorg_config
from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.analytics.prometheus import (
    INSTANT_PATH,
    RANGE_PATH,
    MetricsAnswerError,
    MetricsRequest,
    bounded_answer,
    metrics_request,
)
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.external_data.exchange import (
    ConnectionAnswer,
    ConnectionCredential,
    connection_exchange,
    connection_url,
)
from tools_app.builtin.external_data.tool import external_data_request, resolve_call
from tools_app.contracts import ToolContract, ToolExample
from trust_app.models import Agent
from trust_app.policy import Decision

TOOL_NAME: Final = "metrics_query"
AUDIT_KIND: Final = "analytics.metrics_query"
ACTION_TYPE: Final = "db:query"
_DURATION_PROPERTY: Final = {"type": "string", "minLength": 2, "maxLength": 32}


def _section() -> MetricsSection:
    analytics = synthorg_config().analytics
    if analytics is None or analytics.metrics is None:
        raise ToolFailedError(
            "metrics_query is off: the config has no analytics.metrics section",
            code="METRICS_UNAVAILABLE",
        )
    return analytics.metrics


def _path(arguments: Mapping[str, Any]) -> str:
    return RANGE_PATH if arguments.get("range") is not None else INSTANT_PATH


def _record(
    context: ToolContext,
    connection: str,
    request: MetricsRequest | None,
    *,
    outcome: str,
    reason: str,
    **data: Any,
) -> None:
    agent = Agent.objects.get(id=context.agent_id)
    query = dict(request.params).get("query", "") if request else ""
    with transaction.atomic():
        audit_record(
            kind=AUDIT_KIND,
            actor=Actor.agent(agent),
            agent=agent,
            invocation_id=context.invocation_uuid,
            tool=TOOL_NAME,
            category=ToolCategory.ANALYTICS.value,
            action_type=ACTION_TYPE,
            outcome=outcome,
            reason=reason[:1000],
            data={
                "connection": connection,
                "path": request.path if request else "",
                "query": query[:2000],
                "range_seconds": request.seconds if request else None,
                **data,
            },
        )


class MetricsQueryTool:
    """``metrics_query``: one PromQL query, instant or over a range."""

    contract = ToolContract(
        name=TOOL_NAME,
        category=ToolCategory.ANALYTICS,
        action_type=ACTION_TYPE,
        safety_class=SafetyClass.NETWORK,
        summary="Run a PromQL query against the organisation's metrics (Prometheus API).",
        description=(
            "Evaluates `query` (PromQL) on the configured Prometheus-compatible metrics "
            "connection: now, or over `range` (a duration ending now such as '6h', or "
            "{start, end, step} in Unix seconds or RFC 3339). Returns the series as "
            "[timestamp, value] pairs (values as strings), cut to the configured number "
            "of series and points; `truncated` says so. The host and credential are the "
            "console's."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 65536},
                "range": {
                    "anyOf": [
                        _DURATION_PROPERTY,
                        {
                            "type": "object",
                            "properties": {
                                "start": {"type": ["number", "string"]},
                                "end": {"type": ["number", "string"]},
                                "step": {"type": ["integer", "string"]},
                            },
                            "required": ["start"],
                            "additionalProperties": False,
                        },
                    ]
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "result_type": {"type": "string", "enum": ["vector", "matrix", "scalar", "string"]},
                "series": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "metric": {
                                "type": "object",
                                "additionalProperties": {"type": "string"},
                            },
                            "values": {
                                "type": "array",
                                "items": {
                                    "type": "array",
                                    "prefixItems": [{"type": "number"}, {"type": "string"}],
                                    "minItems": 2,
                                    "maxItems": 2,
                                },
                            },
                        },
                        "required": ["metric", "values"],
                        "additionalProperties": False,
                    },
                },
                "warnings": {"type": "array", "items": {"type": "string"}},
                "truncated": {"type": "boolean"},
            },
            "required": ["result_type", "series", "warnings", "truncated"],
            "additionalProperties": False,
        },
        examples=(
            ToolExample(
                description="Request rate per job over the last hour.",
                arguments={"query": "sum by (job) (rate(http_requests_total[5m]))", "range": "1h"},
                result={
                    "result_type": "matrix",
                    "series": [{"metric": {"job": "api"}, "values": [[1700000000, "12.5"]]}],
                    "warnings": [],
                    "truncated": False,
                },
            ),
        ),
        failure_modes=(
            "HOST_NOT_ALLOWED: the metrics connection (or its query operation) is not "
            "granted to you.",
            "LIMIT_EXCEEDED: the query, the range or its number of points is over the "
            "configured limit, or the connection's rate or concurrency limit is reached.",
            "QUERY_FAILED: Prometheus refused the query (its errorType and error are given).",
        ),
    )

    @staticmethod
    def offered(config: SynthOrgConfig) -> bool:
        """Registered only when ``analytics.metrics`` names a connection."""
        return config.analytics is not None and config.analytics.metrics is not None

    def gate(
        self,
        *,
        arguments: Mapping[str, Any],
        sub_constraints: Mapping[str, Any],
        decision: Decision,
    ) -> Decision | None:
        """At decision time: the connection's grant and operation, judged exactly as
        ``external_data_request`` judges a GET of the query path."""
        return external_data_request.gate(
            arguments={
                "connection": _section().connection,
                "method": "GET",
                "path": _path(arguments),
            },
            sub_constraints=sub_constraints,
            decision=decision,
        )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the grant and the query, take the connection's limits, ask, bound."""
        started = time.monotonic()
        section = _section()
        if context.sub_constraints.get("network") not in ("allowlist_only", "open"):
            raise ToolRefusedError(
                RefusalCode.HOST_NOT_ALLOWED,
                f"network access is not permitted for agent {context.agent_name}",
            )
        call = resolve_call(
            synthorg_config().connections,
            context.sub_constraints,
            {"connection": section.connection, "method": "GET", "path": _path(arguments)},
        )
        connection = call.connection
        request = metrics_request(
            section, arguments.get("query"), arguments.get("range"), time.time()
        )
        credential = ConnectionCredential.for_call(context, connection, tool=TOOL_NAME)

        def record(outcome: str, reason: str) -> None:
            _record(context, connection.name, request, outcome=outcome, reason=reason)

        exchanged = connection_exchange(
            connection,
            credential,
            method="GET",
            url=connection_url(connection, request.path, request.params),
            headers={"Accept": "application/json"},
            body=None,
            record=record,
            agent=context.agent_id,
        )
        structured = self._answer(context, section, connection, request, exchanged)
        shown = len(structured["series"])
        return ToolOutcome(
            content=(
                f"{structured['result_type']} with {shown} series"
                f"{' (truncated)' if structured['truncated'] else ''}\n\n"
                + json.dumps(structured["series"], ensure_ascii=False)
            ),
            structured=structured,
            truncated=bool(structured["truncated"]),
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    @staticmethod
    def _answer(
        context: ToolContext,
        section: MetricsSection,
        connection: Connection,
        request: MetricsRequest,
        exchanged: ConnectionAnswer,
    ) -> dict[str, Any]:
        """The bounded answer, recorded; the API's refusal raised with its words."""
        response, text = exchanged.response, exchanged.text
        try:
            if response.truncated:
                raise MetricsAnswerError(
                    "RESPONSE_TOO_LARGE",
                    f"the answer is over the connection's limit of "
                    f"{connection.max_response_bytes} bytes; narrow the query or use a "
                    "longer step",
                )
            try:
                answer = json.loads(text)
            except ValueError:
                answer = None
            structured = bounded_answer(section, answer, response.status)
        except MetricsAnswerError as exc:
            _record(
                context, connection.name, request, outcome="failed", reason=exc.message,
                status=response.status, bytes=len(response.body),
            )  # fmt: skip
            raise ToolFailedError(exc.message, code=exc.code) from exc
        _record(
            context, connection.name, request, outcome="answered",
            reason=f"{request.path} on connection {connection.name}: HTTP {response.status}, "
            f"{len(structured['series'])} series",
            status=response.status, bytes=len(response.body), truncated=structured["truncated"],
        )  # fmt: skip
        return structured


metrics_query = MetricsQueryTool()
