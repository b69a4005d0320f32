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
    ToolContext,
    ToolFailedError,
    ToolOutcome,
)
from tools_app.builtin.communication.gate import judged, refused
from tools_app.builtin.communication.messages import (
    INTERNAL,
    MessageRefusedError,
    SlackCall,
    slack_call,
)
from tools_app.builtin.external_data.exchange import (
    ConnectionCredential,
    connection_exchange,
    connection_url,
)
from tools_app.contracts import ToolContract, ToolExample
from trust_app.models import Agent
from trust_app.policy import Decision

TOOL_NAME: Final = "slack_post"
AUDIT_KIND: Final = "communication.slack"
METHOD_PATH: Final = "/chat.postMessage"


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


def _refuse_query_credential(connection: Connection) -> None:
    if connection.auth is not None and parse_injection(connection.auth.scheme).kind == "query":
        raise ToolFailedError(
            f"connection {connection.name} injects its credential in the query, which "
            "Slack's Web API does not take; use bearer",
            code="CREDENTIAL_UNAVAILABLE",
        )


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
        _refuse_query_credential(connection)
        credential = ConnectionCredential.for_call(context, connection, tool=TOOL_NAME)

        def record(outcome: str, reason: str) -> None:
            _record(context, call, connection.name, outcome=outcome, reason=reason)

        body = json.dumps(
            {"channel": _channel_argument(call.channel), "text": call.text}, ensure_ascii=False
        ).encode("utf-8")
        exchanged = connection_exchange(
            connection,
            credential,
            method="POST",
            url=connection_url(connection, METHOD_PATH),
            headers={
                "Content-Type": "application/json; charset=utf-8",
                "Accept": "application/json",
            },
            body=body,
            record=record,
            agent=context.agent_id,
        )
        response, text = exchanged.response, exchanged.text
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


slack_post = SlackPostTool()
