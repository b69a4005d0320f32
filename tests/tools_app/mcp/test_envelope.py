"""The one JSON-RPC message of a POST, checked before the SDK sees it."""

from __future__ import annotations

import json

import pytest

from tools_app.mcp.envelope import (
    INVALID_REQUEST,
    PARSE_ERROR,
    Envelope,
    EnvelopeProblem,
    read_envelope,
)

CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "read_file"}}


def _read(message: object) -> Envelope | EnvelopeProblem:
    return read_envelope(json.dumps(message).encode())


def test_a_request_is_read_with_its_id_and_method() -> None:
    envelope = _read(CALL)
    assert isinstance(envelope, Envelope)
    assert envelope.method == "tools/call" and envelope.request_id == 7
    assert envelope.is_request and not envelope.wants_progress


def test_a_batch_gets_a_json_rpc_invalid_request_saying_why() -> None:
    problem = _read([CALL, {**CALL, "id": 8}])
    assert isinstance(problem, EnvelopeProblem)
    assert problem.code == INVALID_REQUEST
    assert "batches are not supported" in problem.message
    assert "one JSON-RPC message per POST" in problem.message


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        (b"{not json", PARSE_ERROR, "not valid JSON"),
        (b"[" * 100_000, PARSE_ERROR, "nested too deeply"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": NaN}}', PARSE_ERROR, "NaN"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": 1e999}}', PARSE_ERROR,
         "out of range"),
        (b'"hello"', INVALID_REQUEST, "an object"),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "x"}', INVALID_REQUEST, '"jsonrpc" must be'),
        (b'{"jsonrpc": "2.0", "id": true, "method": "x"}', INVALID_REQUEST, '"id" must be'),
        (b'{"jsonrpc": "2.0", "id": 1}', INVALID_REQUEST, '"method" string'),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', INVALID_REQUEST, '"method" must be'),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]}', INVALID_REQUEST,
         "named parameters"),
    ],
)  # fmt: skip
def test_a_malformed_message_gets_its_json_rpc_code_and_a_reason(
    body: bytes, code: int, words: str
) -> None:
    problem = read_envelope(body)
    assert isinstance(problem, EnvelopeProblem)
    assert problem.code == code and words in problem.message
    assert "pydantic" not in problem.message and "validation error" not in problem.message.lower()


def test_a_progress_token_asks_for_progress_on_tools_call_only() -> None:
    with_token = {**CALL, "params": {"name": "x", "_meta": {"progressToken": "t1"}}}
    envelope = _read(with_token)
    assert isinstance(envelope, Envelope) and envelope.wants_progress
    listed = _read({**with_token, "method": "tools/list"})
    assert isinstance(listed, Envelope) and not listed.wants_progress


def test_a_cancel_notification_names_its_request() -> None:
    note = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 3, "reason": "user pressed stop"},
    }
    envelope = _read(note)
    assert isinstance(envelope, Envelope)
    assert envelope.cancelled_request == 3 and envelope.cancel_reason == "user pressed stop"
    other = _read({**note, "params": {"requestId": True}})
    assert isinstance(other, Envelope) and other.cancelled_request is None
