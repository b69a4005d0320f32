"""Upstream results as outcomes: every content type, the output cap, server errors."""

from __future__ import annotations

import mcp_types as types

from tools_app.bridge.results import outcome_from_result


def test_text_image_resource_and_link_are_mapped() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(text="hello"),
            types.ImageContent(data="aGVsbG8=", mime_type="image/png"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(uri="test://r/1", text="inside")
            ),
            types.ResourceLink(uri="test://r/2", name="two"),
        ]
    )
    outcome = outcome_from_result(result, max_bytes=10_000)
    assert outcome.is_error is False and outcome.truncated is False
    assert "hello" in outcome.content and "[image image/png, 8 base64" in outcome.content
    assert "[resource test://r/1]\ninside" in outcome.content
    assert "[resource link test://r/2 two]" in outcome.content
    assert outcome.structured == {
        "content": [{"type": "image", "mime_type": "image/png", "data": "aGVsbG8="}]
    }


def test_structured_content_is_kept() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(text="{}")], structured_content={"temperature": 21}
    )
    assert outcome_from_result(result, max_bytes=100).structured == {"temperature": 21}


def test_output_over_the_cap_is_cut_and_flagged() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(text="a" * 50),
            types.ImageContent(data="b" * 100, mime_type="image/png"),
        ]
    )
    outcome = outcome_from_result(result, max_bytes=60)
    assert outcome.truncated is True
    assert outcome.content.startswith("a" * 50) and len(outcome.content.encode()) <= 61
    assert outcome.structured is None, "the image data did not fit"


def test_a_server_error_keeps_its_message() -> None:
    result = types.CallToolResult(content=[types.TextContent(text="no such widget")], is_error=True)
    outcome = outcome_from_result(result, max_bytes=100)
    assert outcome.is_error and outcome.content == "no such widget"
    assert outcome.error_code == "upstream_error"
