"""The invocation an agent is shown: decision reasons, trace and errors sanitised."""

from __future__ import annotations

import uuid

import pytest
from django.conf import settings

from tools_app.models import Invocation
from tools_app.representation import invocation_json
from trust_app.services.agents import agent_create

pytestmark = pytest.mark.django_db

HOSTILE = "\x1b[31m\u202e\u2066\u200b\U000e0041"


def _denied(reason: str, trace: list[str], error: str) -> Invocation:
    agent = agent_create(name=f"shown-{uuid.uuid4().hex[:8]}", access_level="standard").agent
    return Invocation.objects.create(
        agent=agent,
        tool="read_file",
        category="file_system",
        action_type="file:read",
        safety_class="read",
        arguments_hash="0" * 64,
        status="denied",
        decision={"outcome": "deny", "reason": reason, "rule": "approval_rule:secret-text",
                  "trace": trace},
        error_code="denied" if error else "",
        error_message=error,
    )  # fmt: skip


def test_reasons_trace_and_error_are_stripped_and_the_console_s_secrets_redacted() -> None:
    key = settings.SECRET_KEY
    shown = invocation_json(
        _denied(
            reason=f"path {HOSTILE}outside{key[:20]}\n{key[20:]}",
            trace=[f"approval_rule:secret-text: argument 'text'{HOSTILE} is missing"],
            error=f"denied by ada: not now{HOSTILE} {key}",
        )
    )
    assert shown["decision"]["reason"] == "path outside[REDACTED:known_secret]"
    assert shown["decision"]["trace"] == [
        "approval_rule:secret-text: argument 'text' is missing"
    ], "the console's own rule names are not taken for secrets"
    assert shown["error"]["message"] == "denied by ada: not now [REDACTED:known_secret]"


def test_plain_reasons_are_shown_as_they_are() -> None:
    # Positive control: nothing to strip or redact, nothing changes.
    shown = invocation_json(
        _denied(reason="not on the allowlist", trace=["level: standard"], error="")
    )
    assert shown["decision"]["reason"] == "not on the allowlist"
    assert shown["decision"]["rule"] == "approval_rule:secret-text"
    assert shown["decision"]["trace"] == ["level: standard"]
    assert shown["error"] is None


def test_a_policy_denial_s_message_is_the_console_s_own_words() -> None:
    reason = f"approval_rule:secret-text: argument 'text' is missing{HOSTILE}; fail closed"
    shown = invocation_json(_denied(reason=reason, trace=[], error=reason))
    expected = "approval_rule:secret-text: argument 'text' is missing; fail closed"
    assert shown["decision"]["reason"] == expected
    assert shown["error"]["message"] == expected
    # Positive control: a person's reason (not the policy's) is read for credentials.
    person = invocation_json(
        _denied(reason=reason, trace=[], error="denied by ada: secret: hunter2x")
    )
    assert person["error"]["message"] == "denied by ada: secret: [REDACTED:secret_value]"
