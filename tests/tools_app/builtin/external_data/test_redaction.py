"""Response fields redacted by JSON pointer (RFC 6901, with '*' for every item)."""

from __future__ import annotations

from typing import Any

import pytest

from tools_app.builtin.external_data.redaction import REDACTED_FIELD, redacted

BODY: dict[str, Any] = {
    "data": [
        {"id": 1, "ssn": "078-05-1120", "a/b": "slash", "m~n": "tilde"},
        {"id": 2, "ssn": "219-09-9999"},
    ],
    "owner": {"ssn": "123-45-6789", "name": "Ada"},
}


def test_a_pointer_redacts_one_field_and_leaves_the_rest() -> None:
    value, count = redacted(BODY, ["/owner/ssn"])
    assert value["owner"] == {"ssn": REDACTED_FIELD, "name": "Ada"} and count == 1
    assert value["data"] == BODY["data"]
    assert BODY["owner"]["ssn"] == "123-45-6789"  # the input is not changed


def test_a_wildcard_redacts_every_item() -> None:
    value, count = redacted(BODY, ["/data/*/ssn"])
    assert [item["ssn"] for item in value["data"]] == [REDACTED_FIELD, REDACTED_FIELD]
    assert [item["id"] for item in value["data"]] == [1, 2] and count == 2


@pytest.mark.parametrize(
    ("pointer", "where"),
    [("/data/0/a~1b", ("data", 0, "a/b")), ("/data/0/m~0n", ("data", 0, "m~n"))],
)
def test_escaped_tokens_name_their_keys(pointer: str, where: tuple[object, ...]) -> None:
    value, count = redacted(BODY, [pointer])
    node: Any = value
    for step in where:
        node = node[step]
    assert node == REDACTED_FIELD and count == 1


@pytest.mark.parametrize("pointer", ["/data/5/ssn", "/data/01/ssn", "/owner/ssn/x", "/nothing"])
def test_a_pointer_that_names_nothing_changes_nothing(pointer: str) -> None:
    assert redacted(BODY, [pointer]) == (BODY, 0)


def test_the_empty_pointer_redacts_the_whole_body() -> None:
    assert redacted(BODY, [""]) == (REDACTED_FIELD, 1)
