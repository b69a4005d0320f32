"""``send_email``: one plain-text message through Django's mail backend (``EMAIL_URL``).

The agent gives the recipients, the subject and the body; the sender is the config's
(``communication.email.sender``). Every recipient must be in a domain the
organisation sends to and in the agent's ``email_recipients`` grant; a message to the
internal domains alone is ``comms:internal`` and goes at once, one with anyone else
is ``comms:external`` and asks a person first (``external_asks_a_person``). A subject
or recipient that could add a header is refused, and so is a message over the
recipient or size limits. Each is judged when the call is decided (``gate``) and again
before anything is sent; every message sent or failed is audited (``communication.email``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from email.utils import make_msgid
from typing import Any, Final

from django.core.mail import EmailMessage, get_connection
from django.db import transaction

from audit_app.record import Actor, audit_record
from common.config import SynthOrgConfig
from common.config.communication import MAX_RECIPIENTS_CEILING
from common.settings_config import synthorg_config
from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.base import ToolContext, ToolFailedError, ToolOutcome
from tools_app.builtin.communication.gate import judged, refused
from tools_app.builtin.communication.messages import (
    INTERNAL,
    EmailCall,
    MessageRefusedError,
    email_call,
    recipients_line,
)
from tools_app.contracts import ToolContract, ToolExample
from trust_app.models import Agent
from trust_app.policy import Decision

TOOL_NAME: Final = "send_email"
AUDIT_KIND: Final = "communication.email"


def _record(
    context: ToolContext, call: EmailCall, *, outcome: str, reason: str, **data: Any
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
            action_type=call.action_type,
            outcome=outcome,
            reason=reason,
            data={
                "sender": call.sender,
                "recipients": list(call.recipients),
                "external": list(call.external),
                "subject": call.subject,
                "body_bytes": len(call.body.encode("utf-8", "surrogatepass")),
                "body_sha256": hashlib.sha256(
                    call.body.encode("utf-8", "surrogatepass")
                ).hexdigest(),
                **data,
            },
        )


class SendEmailTool:
    """``send_email``: one message to allowlisted recipients."""

    contract = ToolContract(
        name=TOOL_NAME,
        category=ToolCategory.COMMUNICATION,
        # A message to the internal domains alone; the gate asks a person for anyone else.
        action_type=INTERNAL,
        safety_class=SafetyClass.NETWORK,
        idempotency="required",
        summary="Send one plain-text email to recipients you are allowed to write to.",
        description=(
            "Sends one plain-text message from the organisation's sender address. `to` is "
            "one address or a list of bare addresses (name@example.com); each must be one "
            "you are granted. A message to anyone outside the organisation's internal "
            "domains waits for a person's approval. The subject is one line; the body is "
            "sent exactly as given."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "to": {
                    "anyOf": [
                        {"type": "string", "minLength": 3, "maxLength": 320},
                        {
                            "type": "array",
                            "items": {"type": "string", "minLength": 3, "maxLength": 320},
                            "minItems": 1,
                            "maxItems": MAX_RECIPIENTS_CEILING,
                        },
                    ]
                },
                "subject": {"type": "string", "minLength": 1, "maxLength": 900},
                "body": {"type": "string", "maxLength": 1024 * 1024},
            },
            "required": ["to", "subject", "body"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "sent": {"type": "boolean"},
                "message_id": {"type": "string"},
                "recipients": {"type": "array", "items": {"type": "string"}},
                "action_type": {"type": "string"},
            },
            "required": ["sent", "message_id", "recipients", "action_type"],
            "additionalProperties": False,
        },
        examples=(
            ToolExample(
                description="Tell a colleague the nightly build is green.",
                arguments={
                    "to": ["ana@example.com"],
                    "subject": "Nightly build green",
                    "body": "All 412 tests passed.",
                },
                result={
                    "sent": True,
                    "message_id": "<1@example.com>",
                    "recipients": ["ana@example.com"],
                    "action_type": "comms:internal",
                },
            ),
        ),
        failure_modes=(
            "HOST_NOT_ALLOWED: a recipient's domain is not one the organisation sends to, "
            "or the recipient is not granted to you; nothing is sent.",
            "INVALID_ARGUMENT: a recipient is not a bare address, or the subject has a line "
            "break or control character.",
            "LIMIT_EXCEEDED: too many recipients, or the body is over the size limit.",
            "SEND_FAILED: the mail server refused the message or could not be reached.",
        ),
    )

    @staticmethod
    def offered(config: SynthOrgConfig) -> bool:
        """Registered only when ``communication.email`` is configured."""
        return config.communication is not None and config.communication.email is not None

    @staticmethod
    def _section() -> Any:
        communication = synthorg_config().communication
        return communication.email if communication is not None else None

    def gate(
        self,
        *,
        arguments: Mapping[str, Any],
        sub_constraints: Mapping[str, Any],
        decision: Decision,
    ) -> Decision | None:
        """At decision time: refuse what would be refused when run; ask a person for a
        message that leaves the organisation."""
        section = self._section()
        try:
            call = email_call(section, sub_constraints, arguments)
        except MessageRefusedError as exc:
            return refused(decision, exc)
        asks = bool(call.external) and section.external_asks_a_person
        return judged(decision, recipients_line(call), asks=asks)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the message again, send it, and record it."""
        started = time.monotonic()
        section = self._section()
        call = email_call(section, context.sub_constraints, arguments)
        message_id = make_msgid(domain=call.sender.rpartition("@")[2])
        message = EmailMessage(
            subject=call.subject,
            body=call.body,
            from_email=call.sender,
            to=list(call.recipients),
            headers={"Message-ID": message_id},
            connection=get_connection(fail_silently=False, timeout=section.timeout_seconds),
        )
        try:
            message.send()
        except Exception as exc:  # every mail backend raises its own kinds
            reason = f"the mail server did not take the message: {exc.__class__.__name__}: {exc}"
            _record(context, call, outcome="failed", reason=reason[:1000])
            raise ToolFailedError(reason[:1000], code="SEND_FAILED") from exc
        _record(
            context,
            call,
            outcome="sent",
            reason=f"{recipients_line(call)}: sent, subject {call.subject!r}",
            message_id=message_id,
        )
        return ToolOutcome(
            content=f"Sent {message_id} to {', '.join(call.recipients)}.",
            structured={
                "sent": True,
                "message_id": message_id,
                "recipients": list(call.recipients),
                "action_type": call.action_type,
            },
            duration_ms=int((time.monotonic() - started) * 1000),
        )


send_email = SendEmailTool()
