"""Upstream results as outcomes: every content type, the output cap, server errors."""

from __future__ import annotations

import json

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


def _escaped_report() -> dict[str, object]:
    return {
        "status": "\x1b[31mred\x1b[0m",
        "title": "\x1b]0;owned\x07visible",
        "screen": "\x1b[2Jafter",
        "items": ["a\u200bb", 7, True, None],
        "k\x1b[1mey": 1.5,
    }


CLEAN_REPORT = {
    "status": "red",
    "title": "visible",
    "screen": "after",
    "items": ["ab", 7, True, None],
    "key": 1.5,
}
HIDDEN = ("\x1b", "\x07", "\u200b", "\\u001b", "\\u0007", "\\u200b")


def _text_of(text: str) -> str:
    result = types.CallToolResult(content=[types.TextContent(text=text)])
    return outcome_from_result(result, max_bytes=100_000).content


def test_json_text_is_read_as_data_and_its_escapes_removed() -> None:
    # json.dumps writes ESC as \u001b: the text sanitiser alone never sees it.
    for layout in ({}, {"indent": 2}):
        raw = json.dumps(_escaped_report(), **layout)  # type: ignore[arg-type]
        assert "\\u001b" in raw
        content = _text_of(raw)
        assert not [h for h in HIDDEN if h in content], content
        assert json.loads(content) == CLEAN_REPORT
        assert ("\n" in content) == ("indent" in layout), "the server's layout is kept"


def test_json_lines_and_a_document_behind_invisible_characters_are_cleaned() -> None:
    lines = "\n".join(json.dumps({"n": n, "say": "\x1b[2Jhi"}) for n in range(3))
    content = _text_of(lines)
    assert [json.loads(line) for line in content.split("\n")] == [
        {"n": n, "say": "hi"} for n in range(3)
    ]
    hidden_start = "\u200b" + json.dumps({"say": "\x1b]0;t\x07hi"})
    assert json.loads(_text_of(hidden_start).lstrip("\u200b")) == {"say": "hi"}


def test_control_plain_text_and_clean_json_text_are_kept_as_written() -> None:
    for text in (
        "plain words {not json} and a \\u001b spelled out",
        json.dumps({"status": "ok", "tags": ["é", "b"], "n": 3}, indent=2),
        '{"a": 1}\n{"b": [2, "x"]}',
        "[1, 2, 3]",
        '"just a string"',
        "{broken json",
    ):
        assert _text_of(text) == text


def test_structured_content_is_kept_and_a_non_object_one_is_text() -> None:
    report = _escaped_report()
    result = types.CallToolResult(
        content=[types.TextContent(text=json.dumps(report))], structured_content=report
    )
    outcome = outcome_from_result(result, max_bytes=100_000)
    # Sanitised with every structured result when the call settles (sanitize_structure).
    assert outcome.structured == report
    listed = types.CallToolResult(content=[], structured_content=["\x1b[31mred", 1])
    assert outcome_from_result(listed, max_bytes=1000).content == '["red", 1]'
