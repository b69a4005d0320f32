"""The headline: tool, effect line, agent and risk on one line of visible characters."""

from __future__ import annotations

from typing import Any

from notifications_app.messages import (
    cut_middle,
    email_subject,
    headline,
    one_line,
    push_payload,
    slack_payload,
)

TAIL = "../.git/config"


def facts(**extra: Any) -> dict[str, Any]:
    base = {
        "event": "new",
        "request_id": "0" * 8,
        "agent": "build-bot",
        "agent_id": "a1",
        "tool": "write_file",
        "risk_tier": "high",
        "status": "pending",
        "effect": "write 12 B · 1 line to q/a.txt",
        "link": "https://console.example/approvals/x/call/",
    }
    return {**base, **extra}


def test_the_headline_names_tool_effect_agent_and_risk() -> None:
    line = headline(facts())
    assert line == (
        "build-bot → write_file (high risk) waits for approval: write 12 B · 1 line to q/a.txt"
    )
    assert email_subject(facts()).startswith("[SynthOrg] build-bot → write_file")


def test_a_long_effect_loses_its_middle_never_its_end() -> None:
    effect = "write 9 B to notes.txt/" + "./" * 160 + TAIL
    line = headline(facts(effect=effect))
    assert line.endswith(TAIL) and "characters] …" in line
    assert len(line) < 260
    # Control: a short effect is whole.
    assert headline(facts(effect="write 9 B to notes.txt")).endswith(": write 9 B to notes.txt")
    assert cut_middle("abcdef", 6) == "abcdef"


def test_line_breaks_controls_and_bidi_are_written_as_escapes() -> None:
    hostile = "x\r\nBcc: victim@example.com\x00\u202egnp.exe\u2028\u200b"
    line = headline(facts(agent="bot\nX-Injected: 1", effect=hostile))
    assert not any(c in line for c in "\r\n\x00\u202e\u2028\u200b")
    assert "x\\r\\nBcc: victim@example.com\\u0000\\u202egnp.exe\\u2028\\u200b" in line
    assert "bot\\nX-Injected: 1" in line
    # Control: ordinary text, accents and other scripts pass as they are.
    assert one_line("notes/été/日本 — ok") == "notes/été/日本 — ok"


def test_slack_escapes_its_control_characters_and_push_carries_the_link() -> None:
    text = slack_payload(facts(effect="<!channel> & <https://evil.example|here>"))["text"]
    assert "&lt;!channel&gt; &amp; &lt;https://evil.example|here&gt;" in text
    payload = push_payload(facts())
    assert payload["url"] == "https://console.example/approvals/x/call/"
    assert payload["body"] == headline(facts())


def test_a_digest_counts_its_requests_by_tool() -> None:
    digest = facts(
        digest=True,
        count=440,
        tools={"write_file": 437, "shell_command": 1, "read_file": 1, "stat": 1},
    )
    assert headline(digest) == (
        "build-bot: 440 requests wait for approval "
        "(write_file ×437, read_file ×1, shell_command ×1, 1 more tools ×1), high risk"
    )
    settled = facts(
        digest=True, event="decided", count=2, tools={"write_file": 2},
        statuses={"denied": 2},
    )  # fmt: skip
    assert headline(settled) == (
        "build-bot: 2 requests were settled (write_file ×2), denied ×2, high risk"
    )
