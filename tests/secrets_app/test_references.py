"""Where `${secret:NAME}` may stand, and what substitution writes."""

from __future__ import annotations

from typing import Any

import pytest

from secrets_app.references import (
    SecretReferenceError,
    checked_references,
    find_references,
    substitute,
)


def test_a_reference_in_a_header_value_is_taken_and_substituted() -> None:
    arguments: dict[str, Any] = {
        "url": "http://127.0.0.1:9/",
        "headers": {"Authorization": "Bearer ${secret:GH_TOKEN}", "Accept": "text/plain"},
    }
    found = checked_references("http_request", arguments)
    assert [(r.name, r.where) for r in found] == [("GH_TOKEN", "arguments.headers.Authorization")]
    done = substitute(arguments, {"GH_TOKEN": "s3cr3t-value"}, "http_request")
    assert done["headers"] == {"Authorization": "Bearer s3cr3t-value", "Accept": "text/plain"}
    # The original arguments (what is stored) keep the reference.
    assert arguments["headers"]["Authorization"] == "Bearer ${secret:GH_TOKEN}"


@pytest.mark.parametrize(
    ("tool", "arguments", "where"),
    [
        ("http_request", {"url": "http://127.0.0.1:9/?k=${secret:GH_TOKEN}"}, "arguments.url"),
        ("http_request", {"url": "http://x/", "body": "${secret:GH_TOKEN}"}, "arguments.body"),
        (
            "http_request",
            {"url": "http://x/", "headers": {"${secret:GH_TOKEN}": "v"}},
            "arguments.headers.${secret:GH_TOKEN}",
        ),
        ("shell_command", {"argv": ["echo", "${secret:GH_TOKEN}"]}, "arguments.argv.1"),
        ("write_file", {"path": "a", "content": "x ${secret:GH_TOKEN}"}, "arguments.content"),
    ],
)
def test_a_reference_outside_a_slot_is_refused_naming_the_place(
    tool: str, arguments: dict, where: str
) -> None:
    with pytest.raises(SecretReferenceError) as refused:
        checked_references(tool, arguments)
    assert refused.value.reason.startswith(where)
    assert "cannot hold a secret reference" in refused.value.reason


def test_a_malformed_name_is_refused_and_plain_text_is_no_reference() -> None:
    with pytest.raises(SecretReferenceError, match="malformed"):
        checked_references("http_request", {"url": "u", "headers": {"A": "${secret:a b}"}})
    # Positive control: text that only looks alike holds no reference.
    assert find_references({"url": "u", "headers": {"A": "$secret:X {secret:Y}"}}) == []
