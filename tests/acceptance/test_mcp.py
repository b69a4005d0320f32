"""The MCP gateway as stock clients use it, on the console `make run` starts.

The official MCP Python SDK client sends no `_meta` of the console's; people decide
through the operators' REST endpoint, as a person in the browser would.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import pytest

from tests.acceptance.conftest import Console
from tests.acceptance.console import decide
from tests.acceptance.mcp_calls import (
    approval_of,
    late_approval,
    read_back,
    status_of,
    text_of,
    wait_status,
)
from tests.tools_app.mcp.conftest import with_mcp

# A person who takes this long to decide is waited for (the gateway waits 50 s).
PERSON_DELAY_SECONDS = 30
CALL_HEADERS = {"Accept": "application/json, text/event-stream"}


def test_a_stock_client_writes_a_file_without_any_meta(console: Console) -> None:
    token = console.credentials.agents["build-bot"]
    path = f"mcp-{uuid.uuid4().hex[:8]}.txt"

    async def work(session: Any) -> Any:
        listed = await session.list_tools()
        written = await session.call_tool("write_file", {"path": path, "content": "plain\n"})
        return listed, written

    listed, written = with_mcp(console.base_url, token, work)
    write_file = next(t for t in listed.tools if t.name == "write_file")
    hints = write_file.annotations
    assert hints is not None
    assert (hints.read_only_hint, hints.destructive_hint) == (False, True)
    assert (hints.idempotent_hint, hints.open_world_hint) == (False, False)
    assert written.is_error is False, text_of(written)
    assert written.meta["synthorg/status"] == "succeeded"
    read = read_back(console, "build-bot", path)
    assert read.is_error is False and "plain" in text_of(read)


def test_a_call_waits_for_a_person_who_approves_after_30_s_with_progress_notes(
    console: Console, operator: httpx.Client
) -> None:
    token = console.credentials.agents["ops-bot"]
    path = f"mcp-wait-{uuid.uuid4().hex[:8]}.txt"
    notes: list[tuple[float, str]] = []
    asked: list[dict[str, Any]] = []

    def person_decides_late() -> None:
        asked.append(approval_of(operator, "write_file", path))
        time.sleep(PERSON_DELAY_SECONDS)  # a person reading the request; not a measurement
        decide(operator, asked[-1]["id"], "approve")

    async def progress(done: float, total: float | None, message: str | None) -> None:
        notes.append((done, message or ""))

    async def work(session: Any) -> Any:
        person = threading.Thread(target=person_decides_late, name="operator")
        person.start()
        try:
            return await session.call_tool(
                "write_file", {"path": path, "content": "approved\n"}, progress_callback=progress
            )
        finally:
            await anyio.to_thread.run_sync(person.join)

    result = with_mcp(console.base_url, token, work)
    assert result.is_error is False, text_of(result)
    assert result.meta["synthorg/status"] == "succeeded"
    assert asked, "the call waited for a person"
    request_id = asked[-1]["id"]
    # While the call waits, each note names the approval request; a note that falls just
    # after the person's decision (the person takes a multiple of the notes' interval)
    # says where the call stands then.
    waiting = [message for _, message in notes if "awaits a person's approval" in message]
    assert len(waiting) >= 2, notes
    assert all(f"approval request {request_id}" in message for message in waiting), notes
    after = [message for _, message in notes if message not in waiting]
    assert all(message.endswith((" is queued", " is running")) for message in after), notes
    assert [done for done, _ in notes] == sorted(done for done, _ in notes)
    assert "approved" in text_of(read_back(console, "ops-bot", path))


def test_a_persons_denial_reason_reaches_the_agent(
    console: Console, operator: httpx.Client
) -> None:
    token = console.credentials.agents["ops-bot"]
    path = f"mcp-deny-{uuid.uuid4().hex[:8]}.txt"
    reason = f"not during the freeze {uuid.uuid4().hex[:6]}"

    def person_denies() -> None:
        decide(operator, approval_of(operator, "write_file", path)["id"], "deny", reason)

    async def work(session: Any) -> Any:
        person = threading.Thread(target=person_denies, name="operator")
        person.start()
        try:
            return await session.call_tool("write_file", {"path": path, "content": "no\n"})
        finally:
            await anyio.to_thread.run_sync(person.join)

    result = with_mcp(console.base_url, token, work)
    assert result.is_error is True
    assert result.meta["synthorg/status"] == "denied"
    assert reason in text_of(result), text_of(result)
    assert "denied by " in text_of(result)
    assert read_back(console, "ops-bot", path).is_error is True, "nothing was written"


def test_a_client_that_cancels_its_request_cancels_the_invocation(
    console: Console, operator: httpx.Client
) -> None:
    token = console.credentials.agents["ops-bot"]
    path = f"mcp-cancel-{uuid.uuid4().hex[:8]}.txt"

    async def work(session: Any) -> dict[str, Any]:
        async with anyio.create_task_group() as group:
            group.start_soon(session.call_tool, "write_file", {"path": path, "content": "x\n"})
            row = await anyio.to_thread.run_sync(approval_of, operator, "write_file", path)
            group.cancel_scope.cancel()  # the caller gives up: the SDK cancels the request
        return row

    row = with_mcp(console.base_url, token, work)
    invocation_id = row["invocation"]["id"]
    wait_status(console, "ops-bot", invocation_id, "cancelled")
    late = late_approval(operator, row["id"])
    assert late.status_code == 409, late.text
    assert status_of(console, "ops-bot", invocation_id) == "cancelled"
    assert read_back(console, "ops-bot", path).is_error is True, "it never ran"


def _post(console: Console, token: str, message: dict[str, Any], **kw: Any) -> httpx.Response:
    headers = {**CALL_HEADERS, "Authorization": f"Bearer {token}"}
    return httpx.post(console.base_url + "/mcp/", json=message, headers=headers, **kw)


def _call(request_id: int | str, path: str, content: str = "x\n") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"path": path, "content": content}},
    }


def _cancel(request_id: int | str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id, "reason": "the user pressed stop"},
    }


def test_notifications_cancelled_cancels_only_the_senders_own_call(
    console: Console, operator: httpx.Client
) -> None:
    owner = console.credentials.agents["ops-bot"]
    stranger = console.credentials.agents["build-bot"]
    path = f"mcp-note-{uuid.uuid4().hex[:8]}.txt"
    answers: list[httpx.Response] = []
    caller = threading.Thread(
        target=lambda: answers.append(_post(console, owner, _call(41, path), timeout=120)),
        name="mcp-call",
    )
    caller.start()
    try:
        row = approval_of(operator, "write_file", path)
        invocation_id = row["invocation"]["id"]
        # Attack: another agent names the same request id; nothing happens to the call.
        # The cancel is applied before the 202 answer, so the status below is final.
        assert _post(console, stranger, _cancel(41), timeout=30).status_code == 202
        assert status_of(console, "ops-bot", invocation_id) == "pending_approval"
        # The owner's own cancel names its request and cancels the call.
        assert _post(console, owner, _cancel(41), timeout=30).status_code == 202
    finally:
        caller.join(timeout=120)
    wait_status(console, "ops-bot", invocation_id, "cancelled")
    [answer] = answers
    assert answer.status_code == 200
    result = answer.json()["result"]
    assert result["isError"] is True and result["_meta"]["synthorg/status"] == "cancelled"
    assert "the MCP client cancelled request 41" in json.dumps(result)


def _raw_call(console: Console, token: str, message: dict[str, Any]) -> socket.socket:
    """A tools/call sent on a socket of the test's own, left unread."""
    url = urlsplit(console.base_url)
    body = json.dumps(message).encode()
    head = (
        f"POST /mcp/ HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock = socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=30)
    sock.sendall(head + body)
    return sock


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "event-stream"])
def test_a_dropped_connection_withdraws_a_call_still_waiting_for_a_person(
    console: Console, operator: httpx.Client, streaming: bool
) -> None:
    token = console.credentials.agents["ops-bot"]
    path = f"mcp-drop-{uuid.uuid4().hex[:8]}.txt"
    message = _call(7, path)
    if streaming:
        message["params"]["_meta"] = {"progressToken": "drop"}
    sock = _raw_call(console, token, message)
    row = approval_of(operator, "write_file", path)
    sock.close()  # the client goes away while a person has not decided
    invocation_id = row["invocation"]["id"]
    wait_status(console, "ops-bot", invocation_id, "cancelled")
    late = late_approval(operator, row["id"])
    assert late.status_code == 409, late.text
    # Positive control: the same call with the client still there runs once approved.
    kept_path = f"mcp-kept-{uuid.uuid4().hex[:8]}.txt"
    sock = _raw_call(console, token, _call(8, kept_path))
    try:
        kept = approval_of(operator, "write_file", kept_path)
        decide(operator, kept["id"], "approve")
        wait_status(console, "ops-bot", kept["invocation"]["id"], "succeeded")
    finally:
        sock.close()


def test_a_call_still_pending_when_the_wait_ends_is_resumed_by_the_same_call(
    console: Console, operator: httpx.Client
) -> None:
    token = console.credentials.agents["ops-bot"]
    path = f"mcp-resume-{uuid.uuid4().hex[:8]}.txt"
    arguments = {"path": path, "content": "resumed\n"}

    async def call(session: Any) -> Any:
        # `synthorg/wait` 0: the answer comes at once, as after a long wait.
        return await session.call_tool("write_file", arguments, meta={"synthorg/wait": 0})

    pending = with_mcp(console.base_url, token, call)
    assert pending.is_error is True and pending.meta["synthorg/status"] == "pending_approval"
    text = text_of(pending)
    assert "Call write_file again with the same arguments" in text and "/api/" not in text
    row = approval_of(operator, "write_file", path)
    assert row["invocation"]["id"] == pending.meta["synthorg/invocation"]
    decide(operator, row["id"], "approve")

    async def again(session: Any) -> Any:
        return await session.call_tool("write_file", arguments)

    done = with_mcp(console.base_url, token, again)
    assert done.is_error is False, text_of(done)
    assert done.meta["synthorg/invocation"] == pending.meta["synthorg/invocation"]
    # Once its outcome was delivered, the same call again is a new call.
    third = with_mcp(console.base_url, token, call)
    assert third.meta["synthorg/invocation"] != pending.meta["synthorg/invocation"]
    with console.agent("ops-bot") as http:
        withdrawn = http.post(f"/api/v1/invocations/{third.meta['synthorg/invocation']}/cancel/")
        assert withdrawn.json()["status"] == "cancelled", withdrawn.text
