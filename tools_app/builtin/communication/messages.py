"""PURE: a message call checked against the config and the agent's grants.

``email_call`` and ``slack_call`` answer the checked message, or raise
``MessageRefusedError`` naming the decision rule it is recorded under. The gate
asks them when the call is decided and the tool again before anything is sent, so
both read a call the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from common.config.communication import EmailSection, SlackSection
from common.vocabulary.messaging import email_address, slack_channel
from tools_app.builtin.base import RefusalCode, ToolRefusedError

RULE_NOT_CONFIGURED: Final = "communication_not_configured"
RULE_RECIPIENT: Final = "communication_recipient"
RULE_MESSAGE: Final = "communication_message"
RULE_ASKS: Final = "communication_approval"
INTERNAL: Final = "comms:internal"
EXTERNAL: Final = "comms:external"
# Characters that end or fold a header line, or that a mail reader may take for one.
_LINE_BREAKS: Final = frozenset("\r\n\v\f\x85\u2028\u2029")


class MessageRefusedError(ToolRefusedError):
    """A refusal with the decision rule it is recorded under."""

    def __init__(self, code: RefusalCode, reason: str, rule: str) -> None:
        super().__init__(code, reason)
        self.rule = rule


@dataclass(frozen=True, slots=True)
class EmailCall:
    """One message as it will be sent, and whether it leaves the organisation."""

    sender: str
    recipients: tuple[str, ...]
    subject: str
    body: str
    external: tuple[str, ...]
    """The recipients outside ``internal_domains``; none: ``comms:internal``."""

    @property
    def action_type(self) -> str:
        return EXTERNAL if self.external else INTERNAL


@dataclass(frozen=True, slots=True)
class SlackCall:
    channel: str
    text: str


def _invalid(reason: str) -> MessageRefusedError:
    return MessageRefusedError(RefusalCode.INVALID_ARGUMENT, reason, RULE_MESSAGE)


def _header_text(value: object, what: str, limit: int) -> str:
    """A value bound for a header: a string on one line, without control characters."""
    if not isinstance(value, str) or not value.strip():
        raise _invalid(f"{what} must be a non-empty string")
    if any(ch in _LINE_BREAKS or (ord(ch) < 32 and ch != "\t") or ch == "\x7f" for ch in value):
        raise _invalid(
            f"{what} contains a line break or control character, which could add headers "
            "to the message; write it on one line"
        )
    if len(value) > limit:
        raise _invalid(f"{what} is {len(value)} characters; at most {limit}")
    return value


def _recipients(value: object, limit: int) -> tuple[str, ...]:
    given = [value] if isinstance(value, str) else value
    if not isinstance(given, list | tuple) or not given:
        raise _invalid("to must be an address or a non-empty list of addresses")
    if len(given) > limit:
        raise MessageRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"{len(given)} recipients; at most {limit} per message",
            RULE_MESSAGE,
        )
    addresses: list[str] = []
    for entry in given:
        if not isinstance(entry, str):
            raise _invalid("every recipient must be a string")
        try:
            address = email_address(entry)
        except ValueError as exc:
            raise _invalid(f"recipient {exc}") from None
        if address not in addresses:
            addresses.append(address)
    return tuple(addresses)


def _granted(address: str, grants: set[str]) -> bool:
    return address in grants or address.rpartition("@")[2] in grants


def email_call(
    section: EmailSection | None, sub_constraints: Mapping[str, Any], arguments: Mapping[str, Any]
) -> EmailCall:
    """The message of a ``send_email`` call, every recipient allowed, nothing smuggled."""
    if section is None:
        raise MessageRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            "email is not configured (communication.email)",
            RULE_NOT_CONFIGURED,
        )
    recipients = _recipients(arguments.get("to"), section.max_recipients)
    subject = _header_text(arguments.get("subject"), "subject", section.max_subject_chars)
    body = arguments.get("body")
    if not isinstance(body, str):
        raise _invalid("body must be a string")
    size = len(body.encode("utf-8", "surrogatepass"))
    if size > section.max_body_bytes:
        raise MessageRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"body is {size} bytes; at most {section.max_body_bytes}",
            RULE_MESSAGE,
        )
    internal = set(section.internal_domains)
    organisation = internal | set(section.allowed_domains)
    grants = {str(entry).lower() for entry in sub_constraints.get("email_recipients") or ()}
    for address in recipients:
        domain = address.rpartition("@")[2]
        if domain not in organisation:
            raise MessageRefusedError(
                RefusalCode.HOST_NOT_ALLOWED,
                f"recipient {address}: domain {domain} is not one the organisation sends to "
                f"(internal: {', '.join(section.internal_domains)}; allowed: "
                f"{', '.join(section.allowed_domains) or 'none'}); nothing was sent",
                RULE_RECIPIENT,
            )
        if not _granted(address, grants):
            raise MessageRefusedError(
                RefusalCode.HOST_NOT_ALLOWED,
                f"recipient {address} is not granted to this agent (granted: "
                f"{', '.join(sorted(grants)) or 'none'}); nothing was sent; ask an admin "
                "to grant it",
                RULE_RECIPIENT,
            )
    external = tuple(a for a in recipients if a.rpartition("@")[2] not in internal)
    return EmailCall(section.sender, recipients, subject, body, external)


def slack_call(
    section: SlackSection | None, sub_constraints: Mapping[str, Any], arguments: Mapping[str, Any]
) -> SlackCall:
    """The post of a ``slack_post`` call, to a channel both lists allow."""
    if section is None:
        raise MessageRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            "Slack is not configured (communication.slack)",
            RULE_NOT_CONFIGURED,
        )
    given = arguments.get("channel")
    try:
        channel = slack_channel(given) if isinstance(given, str) else None
    except ValueError as exc:
        raise _invalid(str(exc)) from None
    if channel is None:
        raise _invalid("channel must be a string")
    text = arguments.get("text")
    if not isinstance(text, str) or not text.strip():
        raise _invalid("text must be a non-empty string")
    if len(text) > section.max_text_chars:
        raise MessageRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"text is {len(text)} characters; at most {section.max_text_chars}",
            RULE_MESSAGE,
        )
    granted = {str(entry) for entry in sub_constraints.get("slack_channels") or ()}
    if channel not in section.channels or channel not in granted:
        allowed = sorted(granted & set(section.channels))
        raise MessageRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            f"channel {channel} is not one this agent may post to (allowed: "
            f"{', '.join(allowed) or 'none'}); nothing was sent",
            RULE_RECIPIENT,
        )
    return SlackCall(channel, text)


def recipients_line(call: EmailCall) -> str:
    """``email to a@x, b@y is comms:external (b@y outside the organisation)``."""
    line = f"email to {', '.join(call.recipients)} is {call.action_type}"
    if call.external:
        line += f" ({', '.join(call.external)} outside the internal domains)"
    return line
