"""What an MCP client is shown for each way an invocation can end."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from common.errors import InvalidArgumentError, NotFoundError, RateLimitedError
from tools_app.mcp.results import carried_success_result, invocation_result, refusal_result
from tools_app.models import Invocation


def _invocation(**fields: Any) -> Invocation:
    now = timezone.now()
    defaults: dict[str, Any] = {
        "id": uuid.uuid4(),
        "tool": "test_echo",
        "status": "succeeded",
        "decision": {"outcome": "allow", "reason": "allowed"},
        "content": "",
        "structured": None,
        "started_at": now,
        "finished_at": now,
        "error_code": "",
        "error_message": "",
    }
    return Invocation(**{**defaults, **fields})


def _texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


def test_a_success_carries_its_text_and_structured_output() -> None:
    result = invocation_result(_invocation(content="hi\n", structured={"exit_code": 0}))
    assert result.is_error is False
    assert _texts(result) == ["hi\n"]
    assert result.structured_content == {"exit_code": 0}


def test_a_success_without_structured_output_still_has_an_object() -> None:
    # A client validates structuredContent against the declared output schema.
    result = invocation_result(_invocation(content="hi\n"))
    assert result.structured_content == {}


def test_a_failed_run_shows_its_output_once_and_its_code() -> None:
    output = "fatal: no such file\n"
    result = invocation_result(
        _invocation(status="failed", content=output, error_code="tool_error", error_message=output)
    )
    assert result.is_error is True
    assert _texts(result) == [output, "failed (tool_error)"]


def test_a_broken_output_schema_says_why() -> None:
    result = invocation_result(
        _invocation(
            status="failed",
            content="some output",
            error_code="output_invalid",
            error_message="the tool's output broke its output schema: output.exit_code: missing",
        )
    )
    assert result.is_error is True
    assert _texts(result)[-1].startswith("failed (output_invalid): the tool's output broke")


def test_a_timeout_is_an_error_with_the_reason() -> None:
    result = invocation_result(
        _invocation(
            status="timed_out",
            error_code="timeout",
            error_message="the call ran past its time limit and was stopped",
        )
    )
    assert result.is_error is True
    assert _texts(result) == [
        "timed_out (timeout): the call ran past its time limit and was stopped"
    ]
    assert result.meta is not None and result.meta["synthorg/error_code"] == "timeout"


def test_a_call_still_running_names_the_invocation() -> None:
    invocation = _invocation(status="running", finished_at=None)
    result = invocation_result(invocation)
    assert result.is_error is True
    assert f"test_echo (invocation {invocation.id}) is still running" in _texts(result)[0]
    assert "/api/" not in _texts(result)[0]


def test_console_secrets_in_an_error_message_are_redacted() -> None:
    result = invocation_result(
        _invocation(
            status="expired",
            started_at=None,
            error_code="expired",
            error_message=f"nobody decided ({settings.SECRET_KEY})",
        )
    )
    assert settings.SECRET_KEY not in " ".join(_texts(result))
    assert _texts(result)[0].startswith("expired (expired): nobody decided")


@pytest.mark.parametrize(
    "error",
    [
        InvalidArgumentError("arguments.text: 42 is not of type 'string'"),
        RateLimitedError("agent a is over its limit", retry_after=3),
    ],
)
def test_a_refusal_is_an_error_with_its_code_and_reason(error: Any) -> None:
    result = refusal_result(error, tool="test_echo")
    assert result.is_error is True
    [text] = _texts(result)
    assert text.startswith(f"refused ({error.code}): ")
    assert error.message in text


def test_invalid_arguments_name_the_tool_and_where_the_rules_are() -> None:
    error = InvalidArgumentError("arguments.text: 42 is not of type 'string'")
    [text] = _texts(refusal_result(error, tool="test_echo"))
    assert text.startswith("refused (invalid_argument): test_echo: arguments.text: 42")
    assert "inputSchema of test_echo in tools/list" in text


def test_an_unknown_tool_points_at_tools_list_not_at_rest() -> None:
    error = NotFoundError("unknown tool 'nope': GET /api/v1/tools/ lists the tools you may use")
    [text] = _texts(refusal_result(error, tool="nope"))
    assert "/api/" not in text
    assert text.startswith("refused (unknown_tool): there is no tool 'nope'")
    assert "tools/list" in text


def test_a_persons_denial_reaches_the_agent_with_their_reason() -> None:
    result = invocation_result(
        _invocation(
            status="denied",
            started_at=None,
            decision={"outcome": "require_approval", "reason": "locked autonomy asks a person"},
            error_code="denied",
            error_message="denied by alice: not on a Friday",
        )
    )
    assert result.is_error is True
    [text] = _texts(result)
    assert text.startswith("denied by alice: not on a Friday")
    assert "locked autonomy" not in text


def test_a_policy_denial_shows_the_policy_reason() -> None:
    reason = "test_counter is on the agent's denied list"
    result = invocation_result(
        _invocation(
            status="denied",
            started_at=None,
            decision={"outcome": "deny", "reason": reason},
            error_code="denied",
            error_message=reason,
        )
    )
    assert _texts(result) == [f"denied: {reason}"]


def test_a_cut_output_is_marked_in_text_structured_content_and_meta() -> None:
    result = invocation_result(
        _invocation(
            content="x" * 50,
            structured={"path": "big.txt", "truncated": False},
            truncated=True,
        )
    )
    assert result.is_error is False
    texts = _texts(result)
    assert texts[0] == "x" * 50
    assert texts[-1].startswith("[output truncated: test_echo returned more than")
    assert result.structured_content == {"path": "big.txt", "truncated": True}
    assert result.meta is not None and result.meta["synthorg/truncated"] is True


def test_an_output_that_was_not_cut_is_not_marked() -> None:
    result = invocation_result(
        _invocation(content="short", structured={"path": "a.txt", "truncated": False})
    )
    assert _texts(result) == ["short"]
    assert result.structured_content == {"path": "a.txt", "truncated": False}
    assert result.meta is not None and "synthorg/truncated" not in result.meta


def test_a_result_carried_by_the_status_message_reads_as_the_stored_one() -> None:
    invocation = _invocation(
        content="x" * 10, structured={"path": "a.txt", "truncated": False}, truncated=True
    )
    carried = carried_success_result(_agent_view(invocation))
    assert carried is not None
    assert carried.model_dump() == invocation_result(invocation).model_dump()
    # Anything but a success is read from the database instead.
    failed = _invocation(status="failed", error_code="tool_error", error_message="boom")
    assert carried_success_result(_agent_view(failed)) is None


def _agent_view(invocation: Invocation) -> dict[str, Any]:
    """The parts of the REST rendering a terminal status message carries."""
    return {
        "id": str(invocation.id),
        "tool": invocation.tool,
        "status": invocation.status,
        "result": {
            "is_error": invocation.status != "succeeded",
            "content": invocation.content,
            "structured": invocation.structured or {},
            "truncated": invocation.truncated,
        },
    }


@pytest.mark.django_db
def test_a_policy_denial_keeps_the_console_s_own_words_and_strips_hostile_ones() -> None:
    reason = "approval_rule:secret-text: argument 'text' is missing\u202e\x1b[31m; fail closed"
    result = invocation_result(
        _invocation(
            status="denied",
            decision={"outcome": "deny", "reason": reason},
            error_code="denied",
            error_message=reason,
        )
    )
    assert _texts(result) == [
        "denied: approval_rule:secret-text: argument 'text' is missing; fail closed"
    ]
