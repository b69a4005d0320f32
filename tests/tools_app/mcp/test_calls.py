"""MCP calls in flight, kept in Redis: what a cancel and a repeated call refer to."""

from __future__ import annotations

import time
import uuid

from django.conf import settings

from tools_app.mcp.calls import (
    CallBegun,
    call_begin,
    call_for_request,
    cancel_requested,
    unfinished_call_kept,
)


def _begin(agent_id: str, request_id: int, arrived_at: float) -> CallBegun:
    return call_begin(
        agent_id=agent_id, request_id=request_id, tool="write_file",
        arguments={"path": "a.txt", "content": "x"}, invocation_id=uuid.uuid4(),
        resumable=True, arrived_at=arrived_at,
    )  # fmt: skip


def test_a_cancel_that_overtakes_its_call_is_seen_when_the_call_begins() -> None:
    agent = uuid.uuid4().hex
    arrived = time.time()
    cancel_requested(agent_id=agent, request_id=3)
    assert _begin(agent, 3, arrived).cancelled_first is True
    # Positive control: another request id of the same agent is not cancelled.
    assert _begin(agent, 4, arrived).cancelled_first is False


def test_a_stale_cancel_for_an_earlier_request_with_the_same_id_is_ignored() -> None:
    agent = uuid.uuid4().hex
    cancel_requested(agent_id=agent, request_id=1)
    later = time.time() + settings.SYNTHORG_MCP_CANCEL_SKEW_SECONDS + 1
    assert _begin(agent, 1, later).cancelled_first is False


def test_request_ids_are_per_agent_and_tell_1_from_the_string_1() -> None:
    agent, other = uuid.uuid4().hex, uuid.uuid4().hex
    invocation_id = uuid.uuid4()
    call_begin(
        agent_id=agent, request_id=1, tool="t", arguments={}, invocation_id=invocation_id,
        resumable=False, arrived_at=time.time(),
    )  # fmt: skip
    assert call_for_request(agent_id=agent, request_id=1) == invocation_id
    assert call_for_request(agent_id=agent, request_id="1") is None
    assert call_for_request(agent_id=other, request_id=1) is None


def test_an_unfinished_call_is_resumed_once_by_the_same_call() -> None:
    agent = uuid.uuid4().hex
    kept = uuid.uuid4()
    arguments = {"path": "a.txt", "content": "x"}
    unfinished_call_kept(agent_id=agent, tool="write_file", arguments=arguments, invocation_id=kept)
    first = _begin(agent, 9, time.time())
    assert first.resumed == kept
    assert _begin(agent, 10, time.time()).resumed is None
    # Other arguments never resume it.
    unfinished_call_kept(agent_id=agent, tool="write_file", arguments=arguments, invocation_id=kept)
    other = call_begin(
        agent_id=agent, request_id=11, tool="write_file", arguments={"path": "b.txt"},
        invocation_id=uuid.uuid4(), resumable=True, arrived_at=time.time(),
    )  # fmt: skip
    assert other.resumed is None
