"""How a tool's outcome becomes the invocation's result: what reaches the agent is clean."""

from __future__ import annotations

import pytest

from tools_app.builtin.base import ToolOutcome
from tools_app.registry import tool_catalog
from tools_app.services.invocation_execute import _settle_outcome

pytestmark = pytest.mark.django_db

LEAKY = "failed: key id AKIAIOSFODNN7EXAMPLE rejected \x1b[31mred\x1b[0m"


def test_a_failed_run_s_message_is_sanitised_and_the_raw_output_kept() -> None:
    contract = tool_catalog().contract("read_file")
    settled = _settle_outcome(
        contract=contract, outcome=ToolOutcome(content=LEAKY, is_error=True, exit_code=1)
    )
    assert settled.status == "failed"
    assert "AKIAIOSFODNN7EXAMPLE" not in settled.error_message
    assert "\x1b" not in settled.error_message
    assert "AKIAIOSFODNN7EXAMPLE" not in settled.content
    assert settled.raw_content == LEAKY


def test_an_output_schema_violation_does_not_quote_a_secret() -> None:
    contract = tool_catalog().contract("read_file")
    settled = _settle_outcome(
        contract=contract,
        outcome=ToolOutcome(content="ok", structured={"content": ["AKIAIOSFODNN7EXAMPLE"]}),
    )
    assert settled.error_code == "output_invalid"
    assert "AKIAIOSFODNN7EXAMPLE" not in settled.error_message
