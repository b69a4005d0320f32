"""PURE: what each channel says about one approval event.

The message names the request, the agent, the tool, its risk and what happened,
and links to the operators' inbox, where a person signs in to decide. It never
carries the call's arguments (they may hold what only the console should see) and
never a link that decides by being opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notifications_app.slack import decision_buttons, escape_mrkdwn

SUBJECT_PREFIX = "[SynthOrg]"

_HEADLINES = {
    "new": "waits for approval",
    "escalated": "is still waiting: escalated to admins",
    "expiring": "expires soon",
    "decided": "was settled",
}


def inbox_link(console_url: str, request_id: str) -> str:
    """The request's own page: the whole call, its state ("already decided by …" when
    late) and the way to decide it; signing in first brings the person back to it."""
    return f"{console_url.rstrip('/')}/approvals/{request_id}/call/"


def headline(facts: Mapping[str, Any]) -> str:
    """One line: ``agent`` wants ``tool`` (risk), and what happened."""
    what = _HEADLINES.get(str(facts["event"]), str(facts["event"]))
    if facts["event"] == "decided":
        what = f"was {facts['status']}"
        if facts.get("decided_by"):
            what += f" by {facts['decided_by']}"
    return f"{facts['agent']} → {facts['tool']} ({facts['risk_tier']} risk) {what}"


def text_body(facts: Mapping[str, Any]) -> str:
    """The plain text of an email or a chat message."""
    lines = [headline(facts), ""]
    if facts.get("reason"):
        lines.append(f"Why people are asked: {facts['reason']}")
    if facts.get("decision_reason"):
        lines.append(f"Reason given: {facts['decision_reason']}")
    lines.append(f"Approvals: {facts['approvals']} of {facts['required_approvals']}")
    if facts["event"] != "decided":
        lines.append(f"Expires at: {facts['expires_at']}")
    lines.append(f"Open in the console (sign-in required): {facts['link']}")
    return "\n".join(lines)


def email_subject(facts: Mapping[str, Any]) -> str:
    return f"{SUBJECT_PREFIX} {headline(facts)}"


def slack_payload(facts: Mapping[str, Any], *, interactive: bool = False) -> dict[str, Any]:
    """Slack's incoming-webhook body: ``text`` is what every compatible receiver reads
    (Slack's control characters escaped: a name cannot mention or link). Interactive,
    a request still waiting also carries Approve and Deny buttons."""
    text = f"{escape_mrkdwn(headline(facts))}\n<{facts['link']}|Open in the console>"
    payload: dict[str, Any] = {"text": text}
    waiting = facts["event"] != "decided" and facts.get("status", "pending") == "pending"
    if interactive and waiting and facts.get("arguments_hash"):
        payload["blocks"] = [
            {"type": "section", "text": {"type": "mrkdwn", "text": text}},
            decision_buttons(str(facts["request_id"]), str(facts["arguments_hash"])),
        ]
    return payload


def webhook_payload(delivery_id: str, facts: Mapping[str, Any]) -> dict[str, Any]:
    """The signed JSON of a webhook: the delivery's id (for de-duplication) and the facts."""
    return {"delivery": delivery_id, **facts}
