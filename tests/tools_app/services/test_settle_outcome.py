"""How a tool's outcome becomes the invocation's result: what reaches the agent is clean."""

from __future__ import annotations

from typing import Any

import pytest

from tools_app.builtin.base import ToolOutcome
from tools_app.registry import tool_catalog
from tools_app.sanitize import TRUNCATION_MARKER
from tools_app.services.invocation_outcome import settle_outcome

pytestmark = pytest.mark.django_db

LEAKY = "failed: key id AKIAIOSFODNN7EXAMPLE rejected \x1b[31mred\x1b[0m"


def test_a_failed_run_s_message_is_sanitised_and_the_raw_output_kept() -> None:
    contract = tool_catalog().contract("read_file")
    settled = settle_outcome(
        contract=contract, outcome=ToolOutcome(content=LEAKY, is_error=True, exit_code=1)
    )
    assert settled.status == "failed"
    assert "AKIAIOSFODNN7EXAMPLE" not in settled.error_message
    assert "\x1b" not in settled.error_message
    assert "AKIAIOSFODNN7EXAMPLE" not in settled.content
    assert settled.raw_content == LEAKY


def test_an_output_schema_violation_does_not_quote_a_secret() -> None:
    contract = tool_catalog().contract("read_file")
    settled = settle_outcome(
        contract=contract,
        outcome=ToolOutcome(content="ok", structured={"content": ["AKIAIOSFODNN7EXAMPLE"]}),
    )
    assert settled.error_code == "output_invalid"
    assert "AKIAIOSFODNN7EXAMPLE" not in settled.error_message


LISTING = {"tools": [], "total": 0, "truncated": False, "next_offset": None, "loaded": []}


def test_output_the_tool_cut_itself_ends_with_the_truncation_marker() -> None:
    contract = tool_catalog().contract("list_tools")
    cut = settle_outcome(
        contract=contract,
        outcome=ToolOutcome(content="first part", structured=LISTING, truncated=True),
    )
    assert (cut.content, cut.truncated) == ("first part" + TRUNCATION_MARKER, True)
    assert cut.raw_content == "first part"
    # Positive control: output the tool did not cut carries no marker.
    whole = settle_outcome(
        contract=contract, outcome=ToolOutcome(content="all of it", structured=LISTING)
    )
    assert (whole.content, whole.truncated) == ("all of it", False)


def test_output_the_console_cuts_ends_with_one_marker(settings: Any) -> None:
    settings.SYNTHORG_RESULT_MAX_CHARS = 100
    contract = tool_catalog().contract("list_tools")
    cut = settle_outcome(
        contract=contract,
        outcome=ToolOutcome(content="x" * 500, structured=LISTING, truncated=True),
    )
    assert cut.truncated and len(cut.content) <= 100
    assert cut.content.endswith(TRUNCATION_MARKER)
    assert cut.content.count("[TRUNCATED]") == 1


def test_structured_strings_are_stripped_and_numbers_kept() -> None:
    contract = tool_catalog().contract("list_tools")
    assert contract is not None
    structured = {**LISTING, "tools": [{"name\u200b": "x\u202e"}], "l1_token_budget": 4000}
    settled = settle_outcome(
        contract=contract, outcome=ToolOutcome(content="tools", structured=structured)
    )
    assert settled.status == "succeeded", settled.error_message
    assert settled.structured["l1_token_budget"] == 4000
    assert settled.structured["tools"] == [{"name": "x"}]
