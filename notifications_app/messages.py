"""PURE: what each channel says about one approval event.

The message names the request, the agent, the tool, its risk and what happened,
and links to the operators' inbox, where a person signs in to decide. It never
carries the call's arguments (they may hold what only the console should see) and
never a link that decides by being opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SUBJECT_PREFIX = "[SynthOrg]"

_HEADLINES = {
    "new": "waits for approval",
    "escalated": "is still waiting: escalated to admins",
    "expiring": "expires soon",
    "decided": "was settled",
}


def inbox_link(console_url: str, request_id: str) -> str:
    """The operators' inbox, opened at this request (sign-in required)."""
    return f"{console_url.rstrip('/')}/approvals/#req-{request_id}"


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


def slack_payload(facts: Mapping[str, Any]) -> dict[str, Any]:
    """Slack's incoming-webhook body: ``text`` is what every compatible receiver reads."""
    return {"text": f"{headline(facts)}\n<{facts['link']}|Open in the console>"}


def webhook_payload(delivery_id: str, facts: Mapping[str, Any]) -> dict[str, Any]:
    """The signed JSON of a webhook: the delivery's id (for de-duplication) and the facts."""
    return {"delivery": delivery_id, **facts}
