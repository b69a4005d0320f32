"""A tools/call answer is kept alive while it is silent: the writes, and what the SDK's
own messages become around them (ASGI messages, no server)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Callable, Coroutine, MutableMapping
from typing import Any

from tools_app.mcp.keepalive import JSON_WHITESPACE, SSE_COMMENT, kept_alive

INTERVAL = 0.05
ANSWER = {"jsonrpc": "2.0", "id": 7, "result": {"content": [], "isError": False}}


class Wire:
    """What reached the client."""

    def __init__(self) -> None:
        self.messages: list[MutableMapping[str, Any]] = []

    async def send(self, message: MutableMapping[str, Any]) -> None:
        self.messages.append(message)

    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages if "body" in m)

    def starts(self) -> list[MutableMapping[str, Any]]:
        return [m for m in self.messages if m["type"] == "http.response.start"]

    async def until(self, check: Callable[[], bool]) -> None:
        async with asyncio.timeout(10):
            while not check():
                await asyncio.sleep(INTERVAL / 5)


def _start(content_type: bytes, status: int = 200) -> dict[str, Any]:
    return {"type": "http.response.start", "status": status,
            "headers": [(b"content-type", content_type)]}  # fmt: skip


def _body(data: bytes, more: bool = False) -> dict[str, Any]:
    return {"type": "http.response.body", "body": data, "more_body": more}


def _run(work: Callable[[], Coroutine[Any, Any, None]]) -> None:
    # A loop of its own, in a thread of its own: whatever loop the test process runs.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, work()).result(timeout=60)


def test_a_silent_json_answer_is_started_and_fed_white_space_then_parses() -> None:
    wire = Wire()

    async def work() -> None:
        async with kept_alive(wire.send, streaming=False, interval=INTERVAL) as send:
            await wire.until(lambda: wire.body().count(JSON_WHITESPACE) >= 3)
            answer = json.dumps(ANSWER).encode()
            await send(_start(b"application/json"))
            await send({"type": "http.response.body", "body": answer})
        # Nothing after the end of the answer.
        assert wire.messages[-1] == {"type": "http.response.body", "body": answer}

    _run(work)
    [start] = wire.starts()
    assert start["status"] == 200 and (b"content-type", b"application/json") in start["headers"]
    assert json.loads(wire.body()) == ANSWER, "white space before a JSON value is JSON"


def test_an_event_stream_gets_comments_between_its_events() -> None:
    wire = Wire()
    event = b'event: message\ndata: {"jsonrpc": "2.0", "method": "notifications/progress"}\n\n'

    async def work() -> None:
        async with kept_alive(wire.send, streaming=True, interval=INTERVAL) as send:
            await send(_start(b"text/event-stream"))
            await wire.until(lambda: wire.body().count(SSE_COMMENT) >= 2)
            await send(_body(event, more=True))
            await wire.until(lambda: wire.body().endswith(SSE_COMMENT))
            await send(_body(b"", more=False))
        assert wire.messages[-1] == _body(b"", more=False)

    _run(work)
    assert len(wire.starts()) == 1
    assert event in wire.body() and wire.body().startswith(SSE_COMMENT)


def test_control_a_prompt_answer_is_passed_on_untouched() -> None:
    wire = Wire()
    sdk = [_start(b"application/json"), _body(json.dumps(ANSWER).encode())]

    async def work() -> None:
        async with kept_alive(wire.send, streaming=False, interval=60) as send:
            for message in sdk:
                await send(message)

    _run(work)
    assert wire.messages == sdk


def test_an_event_stream_not_yet_started_is_never_started_as_json() -> None:
    wire = Wire()

    async def work() -> None:
        async with kept_alive(wire.send, streaming=True, interval=INTERVAL / 5) as send:
            await asyncio.sleep(INTERVAL)  # several intervals pass before the SDK starts
            await send(_start(b"text/event-stream"))
            await send(_body(b"", more=False))

    _run(work)
    assert wire.messages[0] == _start(b"text/event-stream")
