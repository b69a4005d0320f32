"""PURE: Slack's interactive requests, as Slack documents them.

Slack signs each request with the app's signing secret: ``X-Slack-Signature`` is
``v0=`` and the hex HMAC-SHA256 of ``v0:<X-Slack-Request-Timestamp>:<raw body>``. A
request older (or newer) than five minutes is refused, so a captured one cannot be
replayed later; one seen before is refused by the caller (each signature is kept for
longer than the window). The body is form-encoded with one ``payload`` field of JSON;
a button click is a ``block_actions`` payload naming the user, the action and the value
the console put in the button (the request's id and the hash of its arguments).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qs

from notifications_app.hosts import url_on_hosts

SIGNATURE_VERSION: Final = "v0"
MAX_SKEW_SECONDS: Final = 300
ACTIONS: Final = {"synthorg.approve": "approve", "synthorg.deny": "deny"}
_VALUE_RE: Final = re.compile(r"^([0-9a-f-]{36}):([0-9a-f]{64})$")
MAX_BODY_BYTES: Final = 64 * 1024


class SlackRequestRefused(Exception):
    """Not a request Slack signed for this channel, or not a click the console made;
    ``reason`` is safe to record."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class SlackClick:
    user_id: str
    user_name: str
    decision: str
    request_id: str
    arguments_hash: str
    response_url: str


def slack_signature(secret: str, timestamp: str, body: bytes) -> str:
    base = f"{SIGNATURE_VERSION}:{timestamp}:".encode() + body
    return f"{SIGNATURE_VERSION}=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def check_slack_request(
    *, secret: str, timestamp: str, signature: str, body: bytes, now: float
) -> None:
    """Raise SlackRequestRefused unless Slack signed ``body`` at ``timestamp`` recently."""
    if len(body) > MAX_BODY_BYTES:
        raise SlackRequestRefused("the body is larger than any Slack action")
    if not timestamp.isdigit() or len(timestamp) > 12:
        raise SlackRequestRefused("X-Slack-Request-Timestamp is missing or not a number")
    if abs(now - int(timestamp)) > MAX_SKEW_SECONDS:
        raise SlackRequestRefused("X-Slack-Request-Timestamp is more than five minutes off")
    if not signature.startswith(f"{SIGNATURE_VERSION}="):
        raise SlackRequestRefused("X-Slack-Signature is missing or not a v0 signature")
    if not hmac.compare_digest(slack_signature(secret, timestamp, body), signature):
        raise SlackRequestRefused("X-Slack-Signature does not match the body")


def parse_click(body: bytes) -> SlackClick:
    """The click in a signed ``block_actions`` payload."""
    try:
        fields = parse_qs(body.decode("utf-8"), strict_parsing=True)
        payload: Mapping[str, Any] = json.loads(fields["payload"][0])
    except (UnicodeDecodeError, ValueError, KeyError) as exc:
        raise SlackRequestRefused("the body is not a Slack payload") from exc
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        raise SlackRequestRefused("only button clicks (block_actions) are taken")
    user = payload.get("user")
    actions = payload.get("actions")
    if not isinstance(user, dict) or not isinstance(actions, list) or len(actions) != 1:
        raise SlackRequestRefused("a click names one user and one action")
    action = actions[0] if isinstance(actions[0], dict) else {}
    decision = ACTIONS.get(str(action.get("action_id", "")))
    matched = _VALUE_RE.match(str(action.get("value", "")))
    if decision is None or matched is None:
        raise SlackRequestRefused("the action is not one of the console's buttons")
    response_url = str(payload.get("response_url", ""))
    return SlackClick(
        user_id=str(user.get("id", "")),
        user_name=str(user.get("username") or user.get("name") or "")[:80],
        decision=decision,
        request_id=matched.group(1),
        arguments_hash=matched.group(2),
        response_url=response_url,
    )


def response_url_allowed(url: str, hosts: tuple[str, ...]) -> bool:
    """``url`` is on one of ``hosts`` (exact names only)."""
    return url_on_hosts(url, hosts)


def escape_mrkdwn(text: str) -> str:
    """Slack's three control characters, escaped as Slack asks (no mention, no link)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def decision_buttons(request_id: str, arguments_hash: str) -> dict[str, Any]:
    value = f"{request_id}:{arguments_hash}"
    return {
        "type": "actions",
        "block_id": "synthorg-decide",
        "elements": [
            {
                "type": "button",
                "action_id": "synthorg.approve",
                "text": {"type": "plain_text", "text": "Approve"},
                "style": "primary",
                "value": value,
            },
            {
                "type": "button",
                "action_id": "synthorg.deny",
                "text": {"type": "plain_text", "text": "Deny"},
                "style": "danger",
                "value": value,
                "confirm": {
                    "title": {"type": "plain_text", "text": "Deny this call?"},
                    "text": {"type": "plain_text", "text": "The agent is told it was denied."},
                    "confirm": {"type": "plain_text", "text": "Deny"},
                    "deny": {"type": "plain_text", "text": "Cancel"},
                },
            },
        ],
    }
