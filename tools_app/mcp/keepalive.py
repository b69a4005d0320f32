"""A `tools/call` answer that keeps arriving while the call waits.

A stock MCP client gives up on a response that sends nothing for a few seconds (the
Python SDK with a plain httpx client after 5 s), and a call may wait minutes for a
person. While a `tools/call` is being answered, the gateway writes something harmless
whenever the answer has been silent for `SYNTHORG_MCP_KEEPALIVE_SECONDS` (default 2 s,
below every common client's read timeout):

- on an event stream, an SSE comment (`: waiting`), which every SSE parser skips;
- on a JSON answer, the response is started (200, `application/json`) once the SDK has
  said nothing for that long, and a newline is written at each interval after: white
  space before a JSON value is part of the JSON text, so the answer reads as it would
  have. (By then the SDK has taken the call, and answers every call it took with 200.)

Progress notifications (sent when the client gave a progressToken) say how the call
stands; these writes only keep the connection in use.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import structlog
from django.conf import settings
from starlette.types import Message, Send

SSE_COMMENT = b": waiting\n\n"
JSON_WHITESPACE = b"\n"

log = structlog.get_logger(__name__)


def keepalive_seconds() -> float:
    """How long an answer may stay silent before the gateway writes into it."""
    return float(settings.SYNTHORG_MCP_KEEPALIVE_SECONDS)


def _content_type(message: Message) -> str:
    for key, value in message.get("headers", ()):
        if bytes(key).lower() == b"content-type":
            return bytes(value).decode("latin-1").split(";")[0].strip().lower()
    return ""


class KeepAlive:
    """The `send` of one answer, with the writes that keep it alive (``run``)."""

    def __init__(self, send: Send, interval: float, *, streaming: bool) -> None:
        self._send = send
        self._interval = interval
        # The SDK answers with an event stream (started at once, however long that takes).
        self._streaming = streaming
        self._lock = asyncio.Lock()
        self._last = asyncio.get_running_loop().time()
        self._started = False  # the response's start went out
        self._ours = False  # ...and it was this keep-alive's, not the SDK's
        self._event_stream = False
        self._finished = False

    async def send(self, message: Message) -> None:
        """Pass the SDK's message on (its start dropped when one already went out)."""
        async with self._lock:
            kind = message["type"]
            if kind == "http.response.start":
                if self._ours:
                    if message.get("status") != 200:
                        log.info("mcp_answer_status_after_keepalive", status=message.get("status"))
                    return
                self._started = True
                self._event_stream = _content_type(message) == "text/event-stream"
            await self._send(message)
            if kind == "http.response.body":
                self._last = asyncio.get_running_loop().time()
                self._finished = not message.get("more_body", False)

    async def run(self) -> None:
        """Write into the answer whenever it has been silent for the interval, until it ends
        or the client cannot be written to."""
        loop = asyncio.get_running_loop()
        while not self._finished:
            await asyncio.sleep(max(self._last + self._interval - loop.time(), 0.05))
            async with self._lock:
                if self._finished or loop.time() - self._last < self._interval:
                    continue
                try:
                    await self._write()
                except Exception:  # the client went away: the call's own watch sees it
                    log.info("mcp_keepalive_not_sent", exc_info=True)
                    return
                self._last = loop.time()

    async def end(self) -> None:
        """End an answer this keep-alive started that the SDK left unfinished."""
        async with self._lock:
            if self._ours and not self._finished:
                self._finished = True
                with contextlib.suppress(Exception):
                    await self._send(
                        {"type": "http.response.body", "body": b"", "more_body": False}
                    )

    async def _write(self) -> None:
        if not self._started:
            if self._streaming:
                return  # the SDK's event stream is on its way
            self._started = self._ours = True
            headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
            await self._send({"type": "http.response.start", "status": 200, "headers": headers})
            body = JSON_WHITESPACE
        elif self._event_stream:
            body = SSE_COMMENT
        elif self._ours:
            body = JSON_WHITESPACE
        else:
            return  # the SDK started a JSON answer: its body follows at once
        await self._send({"type": "http.response.body", "body": body, "more_body": True})


@contextlib.asynccontextmanager
async def kept_alive(
    send: Send, *, streaming: bool, interval: float | None = None
) -> AsyncIterator[Send]:
    """A `send` for one `tools/call` answer that is kept alive while the block runs;
    ``streaming`` when the SDK answers it with an event stream."""
    seconds = keepalive_seconds() if interval is None else interval
    keeper = KeepAlive(send, seconds, streaming=streaming)
    task = asyncio.ensure_future(keeper.run())
    try:
        yield keeper.send
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await keeper.end()
