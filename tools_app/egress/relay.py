"""Relay bytes both ways between a client and its destination, counting and bounding them.

The connection ends when the destination closes (after its last bytes reach the
client), or is cut when nothing moves for ``idle_timeout_seconds``, when it has
lived ``max_connection_seconds``, or when ``max_bytes_per_connection`` have
passed; a client that half-closes still gets the rest of the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

from tools_app.egress.limits import ProxyLimits


class RelayCut(Exception):
    """A limit ended the relay; the message says which."""


@dataclass
class Counters:
    """Bytes moved each way and when anything last moved."""

    up: int = 0
    down: int = 0
    last_activity: float = field(default_factory=time.monotonic)


async def _pump(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    counters: Counters,
    *,
    upward: bool,
    limits: ProxyLimits,
) -> None:
    while True:
        chunk = await reader.read(limits.chunk_bytes)
        if not chunk:
            return
        room = limits.max_bytes_per_connection - counters.up - counters.down
        if len(chunk) > room:
            chunk = chunk[: max(room, 0)]
        if chunk:
            writer.write(chunk)
            await writer.drain()
            if upward:
                counters.up += len(chunk)
            else:
                counters.down += len(chunk)
            counters.last_activity = time.monotonic()
        if counters.up + counters.down >= limits.max_bytes_per_connection:
            raise RelayCut(
                f"the connection reached its limit of {limits.max_bytes_per_connection} bytes"
            )


async def relay(
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    counters: Counters,
    *,
    limits: ProxyLimits,
    started: float,
) -> None:
    """Run until the destination's answer is delivered; raise RelayCut when a limit ends it."""
    up = asyncio.ensure_future(_pump(client[0], upstream[1], counters, upward=True, limits=limits))
    down = asyncio.ensure_future(
        _pump(upstream[0], client[1], counters, upward=False, limits=limits)
    )
    try:
        pending: set[asyncio.Future[None]] = {up, down}
        while down in pending:
            now = time.monotonic()
            idle_left = counters.last_activity + limits.idle_timeout_seconds - now
            life_left = started + limits.max_connection_seconds - now
            if idle_left <= 0:
                raise RelayCut(f"nothing moved for {limits.idle_timeout_seconds:g} s (idle limit)")
            if life_left <= 0:
                raise RelayCut(
                    f"the connection reached its limit of {limits.max_connection_seconds:g} s"
                )
            done, pending = await asyncio.wait(
                pending, timeout=min(idle_left, life_left), return_when=asyncio.FIRST_COMPLETED
            )
            for finished in done:
                error = finished.exception()
                if isinstance(error, RelayCut):
                    raise error
                if error is not None and finished is down:
                    return  # the destination reset: what arrived was relayed
                if finished is up:
                    # The client sent all it will send; the destination may still answer.
                    with contextlib.suppress(OSError, RuntimeError):
                        if upstream[1].can_write_eof():
                            upstream[1].write_eof()
        with contextlib.suppress(OSError, RuntimeError):
            await client[1].drain()
    finally:
        for task in (up, down):
            task.cancel()
        await asyncio.gather(up, down, return_exceptions=True)
