"""``slack_post``: one message to a Slack channel through Slack's Web API.

The request is ``POST {connection base URL}/chat.postMessage`` with
``{"channel", "text"}``; the connection (``communication.slack.connection``) fixes the
host (reached through the SSRF guard, redirects only within it), the bot token the
console adds (the connection's ``auth``, never seen by the agent) and the limits
shared with ``external_data_request`` (rate, concurrency, response size). The channel
must be in ``communication.slack.channels`` and in the agent's ``slack_channels``
grant. Posts go at once unless ``asks_a_person`` is set: the channels are the
organisation's own, each granted by name. Every post sent, refused by Slack or failed
is audited (``communication.slack``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, Final

from django.db import transaction

from audit_app.record import Actor, audit_record
from common.config import SynthOrgConfig
from common.config.connections import Connection
from common.settings_config import synthorg_config
from common.vocabulary.categories import SafetyClass, ToolCategory
from common.vocabulary.sealing import parse_injection
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.communication.gate import judged, refused
from tools_app.builtin.communication.messages import (
    INTERNAL,
    MessageRefusedError,
    SlackCall,
    slack_call,
)
from tools_app.builtin.external_data.connection import connection_credential, connection_guard
from tools_app.builtin.external_data.limits import connection_rate_hit, connection_slot
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
from trust_app.policy import Decision

TOOL_NAME: Final = "slack_post"
AUDIT_KIND: Final = "communication.slack"
METHOD_PATH: Final = "/chat.postMessage"
REDACTED: Final = "[REDACTED]"


def _record(
    context: ToolContext,
    call: SlackCall,
    connection: str,
    *,
    outcome: str,
    reason: str,
    **data: Any,
) -> None:
    agent = Agent.objects.get(id=context.agent_id)
    with transaction.atomic():
        audit_record(
            kind=AUDIT_KIND,
            actor=Actor.agent(agent),
            agent=agent,
            invocation_id=context.invocation_uuid,
            tool=TOOL_NAME,
            category=ToolCategory.COMMUNICATION.value,
            action_type=INTERNAL,
            outcome=outcome,
            reason=reason[:1000],
            data={
                "connection": connection,
                "channel": call.channel,
                "text_chars": len(call.text),
                **data,
            },
        )


def _channel_argument(channel: str) -> str:
    """A name as Slack's API takes it (``#deploys``); an ID as it is."""
    return channel if channel[:1].isupper() else f"#{channel}"


def _auth_header(connection: Connection, credential: str) -> dict[str, str]:
    if connection.auth is None or not credential:
        return {}
    injection = parse_injection(connection.auth.scheme)
    if injection.kind == "query":
        raise ToolFailedError(
            f"connection {connection.name} injects its credential in the query, which "
            "Slack's Web API does not take; use bearer",
            code="CREDENTIAL_UNAVAILABLE",
        )
    return {injection.header: injection.header_value(credential)}


class SlackPostTool:
    """``slack_post``: one message to an allowlisted Slack channel."""

    contract = ToolContract(
        name=TOOL_NAME,
        category=ToolCategory.COMMUNICATION,
        action_type=INTERNAL,
        safety_class=SafetyClass.NETWORK,
        idempotency="required",
        summary="Post one message to a Slack channel you are allowed to post to.",
        description=(
            "Posts `text` to `channel` (a name such as #deploys, or a channel ID) through "
            "the organisation's Slack connection; the token is the console's and never "
            "shown to you. Slack's own formatting applies (mrkdwn, <@U123> mentions)."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "channel": {"type": "string", "minLength": 1, "maxLength": 81},
                "text": {"type": "string", "minLength": 1, "maxLength": 40000},
            },
            "required": ["channel", "text"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "ok": {"type": "boolean"},
                "channel": {"type": "string"},
                "ts": {"type": "string"},
            },
            "required": ["ok", "channel", "ts"],
            "additionalProperties": False,
        },
        examples=(
            ToolExample(
                description="Announce a finished deploy.",
                arguments={"channel": "#deploys", "text": "v2.4.1 is live on staging."},
                result={"ok": True, "channel": "C0123ABCD", "ts": "1700000000.000100"},
            ),
        ),
        failure_modes=(
            "HOST_NOT_ALLOWED: the channel is not one you may post to; nothing is sent.",
            "LIMIT_EXCEEDED: the text is too long, or the Slack connection's rate or "
            "concurrency limit is reached.",
            "SLACK_ERROR: Slack answered ok=false (its error code is given).",
        ),
    )

    @staticmethod
    def offered(config: SynthOrgConfig) -> bool:
        """Registered only when ``communication.slack`` is configured."""
        return config.communication is not None and config.communication.slack is not None

    @staticmethod
    def _section() -> Any:
        communication = synthorg_config().communication
        return communication.slack if communication is not None else None

    def gate(
        self,
        *,
        arguments: Mapping[str, Any],
        sub_constraints: Mapping[str, Any],
        decision: Decision,
    ) -> Decision | None:
        """At decision time: refuse a channel not allowed; ask when the config says so."""
        section = self._section()
        try:
            call = slack_call(section, sub_constraints, arguments)
        except MessageRefusedError as exc:
            return refused(decision, exc)
        return judged(decision, f"Slack post to #{call.channel}", asks=section.asks_a_person)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the post again, take the connection's limits, send it and read Slack's
        answer."""
        started = time.monotonic()
        section = self._section()
        call = slack_call(section, context.sub_constraints, arguments)
        connection = synthorg_config().connection(section.connection)
        assert connection is not None  # the config model refuses a dangling name
        credential = connection_credential(context, connection, tool=TOOL_NAME)
        rate = connection.rate
        if rate is not None:
            wait = connection_rate_hit(connection.name, limit=rate[0], window_seconds=rate[1])
            if wait:
                reason = (
                    f"connection {connection.name} is over its rate limit of "
                    f"{connection.rate_limit}; nothing was sent; retry in {wait}s"
                )
                _record(context, call, connection.name, outcome="rate_limited", reason=reason)
                raise ToolRefusedError(RefusalCode.LIMIT_EXCEEDED, reason)
        with connection_slot(
            connection.name,
            limit=connection.max_concurrency,
            hold_seconds=connection.timeout_seconds,
        ) as taken:
            if not taken:
                reason = (
                    f"connection {connection.name} already has {connection.max_concurrency} "
                    "requests in flight; nothing was sent; retry in a few seconds"
                )
                _record(
                    context, call, connection.name, outcome="concurrency_limited", reason=reason
                )
                raise ToolRefusedError(RefusalCode.LIMIT_EXCEEDED, reason)
            response = self._send(context, call, connection, credential)
        text = response.text().replace(credential, REDACTED) if credential else response.text()
        try:
            answer = json.loads(text) if not response.truncated else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or answer.get("ok") is not True:
            error = answer.get("error") if isinstance(answer, dict) else None
            reason = (
                f"Slack did not post to #{call.channel}: HTTP {response.status}, "
                f"{'error ' + str(error) if error else 'not a Slack answer'}"
            )
            _record(
                context, call, connection.name, outcome="failed", reason=reason,
                status=response.status, error=str(error or ""),
            )  # fmt: skip
            raise ToolFailedError(reason, code="SLACK_ERROR")
        ts, channel = str(answer.get("ts", "")), str(answer.get("channel", call.channel))
        _record(
            context, call, connection.name, outcome="sent",
            reason=f"posted to #{call.channel} (ts {ts})", status=response.status, ts=ts,
        )  # fmt: skip
        return ToolOutcome(
            content=f"Posted to #{call.channel} (ts {ts}).",
            structured={"ok": True, "channel": channel, "ts": ts},
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    @staticmethod
    def _send(
        context: ToolContext, call: SlackCall, connection: Connection, credential: str
    ) -> FetchResponse:
        host = connection.host_entry
        guard = connection_guard(connection)
        overrides = _auth_header(connection, credential)
        home = host.rpartition(":")[0].strip("[]")
        body = json.dumps(
            {"channel": _channel_argument(call.channel), "text": call.text}, ensure_ascii=False
        ).encode("utf-8")

        def credential_for(hop_host: str) -> Mapping[str, str]:
            return overrides if hop_host == home else {}

        def masked(text: str) -> str:
            return text.replace(credential, REDACTED) if credential else text

        try:
            return fetch(
                guard,
                method="POST",
                url=connection.base_url + METHOD_PATH,
                headers={
                    "Content-Type": "application/json; charset=utf-8",
                    "Accept": "application/json",
                },
                body=body,
                limits=FetchLimits(
                    timeout_seconds=connection.timeout_seconds,
                    max_response_bytes=connection.max_response_bytes,
                ),
                header_overrides=credential_for,
            )
        except EgressError as exc:
            refused_call = refusal(exc)
            reason = masked(refused_call.reason)
            _record(context, call, connection.name, outcome="refused", reason=reason)
            raise ToolRefusedError(refused_call.code, reason) from exc
        except EgressDeadlineError as exc:
            message = masked(exc.message)
            _record(context, call, connection.name, outcome="timed_out", reason=message)
            raise ToolFailedError(message, code="TIMEOUT", timed_out=True) from exc
        except EgressRequestFailedError as exc:
            message = masked(exc.message)
            _record(context, call, connection.name, outcome="failed", reason=message)
            raise ToolFailedError(message, code="REQUEST_FAILED") from exc


slack_post = SlackPostTool()
