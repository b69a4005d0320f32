"""PURE: what each channel says about one approval event, or about a burst of them.

The headline names the tool, the call's effect as the card's first line states it
(the normalised target; a long line loses its middle, never its end), the agent and
the risk label, so a message can be triaged without opening it. Every value in it
is one line of visible characters: a line break, a control, a bidi override or any
other invisible character is written as its escape, so an argument can neither add
a mail header nor reorder what a person reads. The link leads to the request's own
page (or, for a digest, to the inbox); no link decides by being opened.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

from notifications_app.slack import decision_buttons, escape_mrkdwn

SUBJECT_PREFIX = "[SynthOrg]"
# Characters of the effect line in a headline (a mail subject, a push title).
HEADLINE_EFFECT_CHARS: Final = 160
# Tools named in a digest's headline; the rest are counted together.
DIGEST_TOOLS_NAMED: Final = 3
# Short values in a headline (an agent, a tool, a person's name).
NAME_CHARS: Final = 80

_HEADLINES: Final = {
    "new": "waits for approval",
    "escalated": "is still waiting: escalated to admins",
    "expiring": "expires soon",
    "decided": "was settled",
}
_DIGEST_HEADLINES: Final = {
    "new": "wait for approval",
    "escalated": "are still waiting: escalated to admins",
    "expiring": "expire soon",
    "decided": "were settled",
}
# Characters that would break a line, hide, or move the text around them.
_HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp", "Zs"})
_ESCAPES: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    point = ord(char)
    return _ESCAPES.get(char) or (f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}")


def one_line(value: Any) -> str:
    """``value`` as one line of visible characters: every invisible or line-breaking
    character (a plain space excepted) written as its escape."""
    text = str(value)
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        char
        if char == " " or unicodedata.category(char) not in _HIDDEN_CATEGORIES
        else _escape(char)
        for char in text
    )


def cut_middle(text: str, keep: int) -> str:
    """``text`` whole when it fits, else its start and its end with the count between."""
    if len(text) <= keep:
        return text
    head = keep // 2
    tail = keep - head
    return f"{text[:head]} … [{len(text) - head - tail:,} characters] … {text[-tail:]}"


def short(value: Any, keep: int = NAME_CHARS) -> str:
    return cut_middle(one_line(value), keep)


def inbox_link(console_url: str, request_id: str) -> str:
    """The request's own page: the whole call, its state ("already decided by …" when
    late) and the way to decide it; signing in first brings the person back to it."""
    return f"{console_url.rstrip('/')}/approvals/{request_id}/call/"


def agent_inbox_link(console_url: str, agent: str) -> str:
    """The inbox narrowed to one agent's requests (a digest's link)."""
    return f"{console_url.rstrip('/')}/approvals/?agent={quote(agent, safe='')}"


def _what(facts: Mapping[str, Any]) -> str:
    what = _HEADLINES.get(str(facts["event"]), short(facts["event"]))
    if facts["event"] == "decided":
        what = f"was {short(facts['status'])}"
        if facts.get("decided_by"):
            what += f" by {short(facts['decided_by'])}"
    return what


def effect_text(facts: Mapping[str, Any], keep: int = HEADLINE_EFFECT_CHARS) -> str:
    """The call's effect line, one line, its middle cut to ``keep`` characters."""
    effect = facts.get("effect")
    return cut_middle(one_line(effect), keep) if effect else "(effect not stated)"


def tool_counts(tools: Mapping[str, int]) -> str:
    """``write_file ×438, shell_command ×2`` (most first), the rest counted together."""
    ranked = sorted(tools.items(), key=lambda item: (-item[1], item[0]))
    named = [f"{short(tool)} ×{count}" for tool, count in ranked[:DIGEST_TOOLS_NAMED]]
    rest = ranked[DIGEST_TOOLS_NAMED:]
    if rest:
        named.append(f"{len(rest)} more tools ×{sum(count for _, count in rest)}")
    return ", ".join(named)


def _digest_headline(facts: Mapping[str, Any]) -> str:
    count = int(facts["count"])
    what = _DIGEST_HEADLINES.get(str(facts["event"]), short(facts["event"]))
    requests = "request" if count == 1 else "requests"
    line = f"{short(facts['agent'])}: {count} {requests} {what} ({tool_counts(facts['tools'])})"
    if facts["event"] == "decided" and facts.get("statuses"):
        line += f", {tool_counts(facts['statuses'])}"
    return f"{line}, {short(facts['risk_tier'])} risk"


def headline(facts: Mapping[str, Any]) -> str:
    """One line: the agent, the tool, the risk, what happened and the call's effect;
    for a digest, the agent, how many requests and of which tools."""
    if facts.get("digest"):
        return _digest_headline(facts)
    who = f"{short(facts['agent'])} → {short(facts['tool'])}"
    return f"{who} ({short(facts['risk_tier'])} risk) {_what(facts)}: {effect_text(facts)}"


def text_body(facts: Mapping[str, Any]) -> str:
    """The plain text of an email or a chat message."""
    if facts.get("digest"):
        return digest_body(facts)
    lines = [headline(facts), ""]
    if facts.get("effect"):
        lines.append(f"Effect: {one_line(facts['effect'])}")
    if facts.get("reason"):
        lines.append(f"Why people are asked: {one_line(facts['reason'])}")
    if facts.get("decision_reason"):
        lines.append(f"Reason given: {one_line(facts['decision_reason'])}")
    lines.append(f"Approvals: {facts['approvals']} of {facts['required_approvals']}")
    if facts["event"] != "decided":
        lines.append(f"Expires at: {facts['expires_at']}")
    lines.append(f"Open in the console (sign-in required): {facts['link']}")
    return "\n".join(lines)


def digest_body(facts: Mapping[str, Any]) -> str:
    lines = [headline(facts), ""]
    lines.append(f"Requests: {facts['count']}, from {facts['first_at']} to {facts['last_at']}")
    lines.append(f"Tools: {tool_counts(facts['tools'])}")
    if facts.get("statuses"):
        lines.append(f"Outcomes: {tool_counts(facts['statuses'])}")
    if facts.get("sample_effect"):
        lines.append(f"For example: {effect_text(facts, keep=600)}")
    lines.append(f"Open the agent's requests (sign-in required): {facts['link']}")
    return "\n".join(lines)


def email_subject(facts: Mapping[str, Any]) -> str:
    return f"{SUBJECT_PREFIX} {headline(facts)}"


def slack_payload(facts: Mapping[str, Any], *, interactive: bool = False) -> dict[str, Any]:
    """Slack's incoming-webhook body: ``text`` is what every compatible receiver reads
    (Slack's control characters escaped: a name cannot mention or link). Interactive,
    a request still waiting also carries Approve and Deny buttons."""
    label = "Open the agent's requests" if facts.get("digest") else "Open in the console"
    text = f"{escape_mrkdwn(headline(facts))}\n<{facts['link']}|{label}>"
    payload: dict[str, Any] = {"text": text}
    waiting = facts["event"] != "decided" and facts.get("status", "pending") == "pending"
    if interactive and waiting and facts.get("arguments_hash") and not facts.get("digest"):
        payload["blocks"] = [
            {"type": "section", "text": {"type": "mrkdwn", "text": text}},
            decision_buttons(str(facts["request_id"]), str(facts["arguments_hash"])),
        ]
    return payload


def webhook_payload(delivery_id: str, facts: Mapping[str, Any]) -> dict[str, Any]:
    """The signed JSON of a webhook: the delivery's id (for de-duplication), the
    headline and the facts."""
    return {"delivery": delivery_id, "headline": headline(facts), **facts}


def push_payload(facts: Mapping[str, Any]) -> dict[str, Any]:
    """What the service worker shows: a title, a line, and the page a tap opens."""
    if facts.get("digest"):
        title = f"{short(facts['agent'])}: {facts['count']} requests"
    else:
        title = f"{short(facts['agent'])} → {short(facts['tool'])} ({short(facts['risk_tier'])})"
    return {
        "title": title,
        "body": headline(facts),
        "url": str(facts["link"]),
        "tag": str(facts.get("request_id") or facts.get("batch_key") or ""),
    }
