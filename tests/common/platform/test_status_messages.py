"""Status messages over Redis publish/subscribe, against the suite's real Redis."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from common.platform.redis import redis_client
from common.platform.status_messages import CHANNEL_PREFIX, LEAVE_SECONDS, listening, publish

T = TypeVar("T")


def _run(scenario: Callable[[], Awaitable[T]]) -> T:
    """Run ``scenario`` on an event loop of its own thread (a browser test may keep one
    running in the main thread)."""
    found: list[T] = []
    failed: list[BaseException] = []

    def main() -> None:
        try:
            found.append(asyncio.run(scenario()))  # type: ignore[arg-type]
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=main)
    thread.start()
    thread.join(60)
    if failed:
        raise failed[0]
    assert found, "the scenario did not finish within 60 s"
    return found[0]


def _name() -> str:
    return f"test.{uuid.uuid4()}"


def test_a_listener_gets_what_is_published_on_its_channel_only() -> None:
    mine, other = _name(), _name()

    async def scenario() -> list[Any]:
        async with listening(mine) as listener:
            assert listener is not None
            await asyncio.to_thread(publish, other, {"n": 0})
            await asyncio.to_thread(publish, mine, {"n": 1, "at": uuid.UUID(int=7)})
            await asyncio.to_thread(publish, mine, {"n": 2}, wait=False)
            return [await listener.next(10), await listener.next(10), await listener.next(0.3)]

    first, second, third = _run(scenario)
    assert first == {"n": 1, "at": str(uuid.UUID(int=7))}
    assert second == {"n": 2}
    assert third is None  # nothing else came, and the other channel's message did not


def test_two_waits_on_one_channel_each_get_it_and_one_leaving_keeps_the_other() -> None:
    name = _name()

    async def scenario() -> tuple[Any, Any, Any, bool]:
        async with listening(name) as first:
            assert first is not None
            async with listening(name) as second:
                assert second is not None
                await asyncio.to_thread(publish, name, {"n": 1})
                both = (await first.next(10), await second.next(10))
            # The second left; the first still hears the channel.
            await asyncio.to_thread(publish, name, {"n": 2})
            after = await first.next(10)
            return both[0], both[1], after, first.broken

    one, two, after, broken = _run(scenario)
    assert one == two == {"n": 1}
    assert after == {"n": 2}
    assert not broken


def test_leaving_and_joining_again_at_once_misses_nothing() -> None:
    name = _name()

    async def scenario() -> list[Any]:
        got = []
        for n in range(20):
            async with listening(name) as listener:
                assert listener is not None
                await asyncio.to_thread(publish, name, {"n": n})
                got.append(await listener.next(10))
        return got

    assert _run(scenario) == [{"n": n} for n in range(20)]


def test_a_broken_connection_tells_the_waiter_and_the_next_wait_listens_again() -> None:
    name = _name()

    async def scenario() -> tuple[Any, bool, Any, bool]:
        async with listening(name) as listener:
            assert listener is not None
            # Redis drops every subscriber connection (as a restart would).
            killed = await asyncio.to_thread(
                redis_client().execute_command, "CLIENT", "KILL", "TYPE", "pubsub"
            )
            assert killed >= 1
            missed = await listener.next(10)
            broken = listener.broken
        # The next wait gets a fresh connection and hears its message.
        async with listening(name) as again:
            assert again is not None
            await asyncio.to_thread(publish, name, {"n": 3})
            return missed, broken, await again.next(10), again.broken

    missed, broken, heard, broken_again = _run(scenario)
    assert missed is None
    assert broken, "a waiter whose connection broke must be told so"
    assert heard == {"n": 3}
    assert not broken_again


def _unsubscribes() -> int:
    stats = redis_client().info("commandstats")
    return int(stats.get("cmdstat_unsubscribe", {}).get("calls", 0))


def _numsub(channels: list[str]) -> list[int]:
    return [int(n) for _, n in redis_client().pubsub_numsub(*channels)]


def test_channels_left_together_are_unsubscribed_in_one_command() -> None:
    """Twenty waits ending at once leave their channels with one UNSUBSCRIBE (not
    twenty); every channel is left all the same, and a wait that stays hears on."""
    names = [_name() for _ in range(20)]
    kept = _name()
    channels = [CHANNEL_PREFIX + n for n in names]

    async def scenario() -> tuple[list[int], list[int], int, Any]:
        async with listening(kept) as staying, contextlib.AsyncExitStack() as waits:
            assert staying is not None
            for name in names:
                assert await waits.enter_async_context(listening(name)) is not None
            # The control: while the waits last, Redis has each channel subscribed.
            during = await asyncio.to_thread(_numsub, channels)
            before = await asyncio.to_thread(_unsubscribes)
            await waits.aclose()
            await asyncio.sleep(LEAVE_SECONDS * 10)
            after = await asyncio.to_thread(_numsub, channels)
            sent = await asyncio.to_thread(_unsubscribes) - before
            await asyncio.to_thread(publish, kept, {"n": 1})
            return during, after, sent, await staying.next(10)

    during, after, sent, heard = _run(scenario)
    assert during == [1] * 20
    assert after == [0] * 20
    # One command for the twenty (another test's client could add one more).
    assert 1 <= sent <= 2
    assert heard == {"n": 1}
