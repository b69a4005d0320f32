"""What an MCP client is shown for each way an invocation can end."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from common.errors import InvalidArgumentError, RateLimitedError
from tools_app.mcp.results import invocation_result, refusal_result
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
    assert f"invocation {invocation.id} is still running" in _texts(result)[0]


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
    result = refusal_result(error)
    assert result.is_error is True
    assert _texts(result) == [f"refused ({error.code}): {error.message}"]
