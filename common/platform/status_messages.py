"""Short status messages to whoever waits on one thing now, over Redis publish/subscribe.

A request that waits for a call's end listens on the call's own channel. Each
process keeps one subscriber connection per event loop, shared by every wait on
that loop: joining a channel is one SUBSCRIBE on it (confirmed by Redis before
the wait goes on, so a message published after the join cannot be missed) and
leaving is an UNSUBSCRIBE sent in the background, one for every channel left within
LEAVE_SECONDS. A message is one PUBLISH.
The channel layer's groups, by contrast, cost a sorted-set write to join, another
to leave, and a script per message.

Messages are hints: a waiter that misses one (Redis restarted, the subscriber's
connection broke) is told so (``Listener.broken``) and reads the database
instead. The subscriber connection never reconnects by itself: a silent
reconnect would hide the messages published while it was away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis.asyncio as aioredis
import structlog
from django.conf import settings
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry
from rest_framework.utils.encoders import JSONEncoder

from common.platform.redis import redis_client
from common.platform.redis_options import client_options

log = structlog.get_logger("synthorg.live")

CHANNEL_PREFIX = "synthorg:status:"
# Redis confirms a SUBSCRIBE within this many seconds, or the join counts as failed.
CONFIRM_SECONDS = 5.0
# The subscriber connection is PINGed this often; silent for twice as long, it is broken.
HEARTBEAT_SECONDS = 15.0
# Channels left within this many seconds are unsubscribed together, in one command: a
# left channel may still hear a message meanwhile, which no wait takes.
LEAVE_SECONDS = 0.05


class _Broken:
    """Put in a listener's queue when the subscriber connection broke."""


_BROKEN = _Broken()


class Listener:
    """One wait's view of one channel: the messages published on it since it joined."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[dict[str, Any] | _Broken] = asyncio.Queue()
        # True once messages may have been missed: the caller reads the database instead.
        self.broken = False

    async def next(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None after ``timeout`` seconds or once broken."""
        if self.broken:
            return None
        try:
            item = await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None
        if isinstance(item, _Broken):
            self.broken = True
            return None
        return item

    def _deliver(self, item: dict[str, Any] | _Broken) -> None:
        self._queue.put_nowait(item)


def _subscriber_client() -> aioredis.Redis:
    options = client_options(settings.REDIS_URL, settings.REDIS_TIMEOUTS)
    # A subscriber waits for messages as long as there are none: no read timeout. It
    # never retries or reconnects by itself (see the module's note). No health check
    # either: it reads a PING's answer, and only the reader task may read.
    options["socket_timeout"] = None
    options["health_check_interval"] = 0
    return aioredis.Redis.from_url(settings.REDIS_URL, retry=Retry(NoBackoff(), 0), **options)


class _Subscriber:
    """The channels one event loop's waits listen on, over one connection."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._pubsub: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._listeners: dict[str, set[Listener]] = {}
        self._confirming: dict[str, asyncio.Future[None]] = {}
        # Channels left on the present connection and not unsubscribed yet.
        self._departed: set[str] = set()
        self._last_heard = 0.0

    async def join(self, channel: str) -> Listener:
        listener = Listener()
        async with self._lock:
            if self._pubsub is None:
                self._pubsub = _subscriber_client().pubsub()
            pubsub = self._pubsub
            listeners = self._listeners.setdefault(channel, set())
            listeners.add(listener)
            confirmed = self._confirming.get(channel)
            if len(listeners) == 1:
                confirmed = self._confirming[channel] = asyncio.get_running_loop().create_future()
                try:
                    await pubsub.subscribe(channel)
                except BaseException:
                    self._fail(pubsub, "subscribe failed")
                    raise
                if self._reader is None:
                    self._reader = asyncio.ensure_future(self._read(pubsub))
                    self._heartbeat = asyncio.ensure_future(self._beat(pubsub))
        if confirmed is not None:
            try:
                await asyncio.wait_for(asyncio.shield(confirmed), CONFIRM_SECONDS)
            except BaseException:
                self.leave(channel, listener)
                raise
        return listener

    def leave(self, channel: str, listener: Listener) -> None:
        listeners = self._listeners.get(channel)
        if listeners is None or listener not in listeners:
            return
        listeners.discard(listener)
        if not listeners:
            del self._listeners[channel]
            self._departed.add(channel)
            if len(self._departed) == 1:
                leaving = asyncio.ensure_future(self._unsubscribe_left(self._pubsub))
                _leaving.add(leaving)
                leaving.add_done_callback(_left)

    async def _unsubscribe_left(self, pubsub: Any) -> None:
        """After LEAVE_SECONDS, one UNSUBSCRIBE for every channel left meanwhile."""
        await asyncio.sleep(LEAVE_SECONDS)
        async with self._lock:
            if pubsub is not self._pubsub:
                # Replaced: the old connection left every channel with it, and what was
                # left since on the new one is for the new one's own leave.
                return
            left, self._departed = self._departed, set()
            # Joined again meanwhile: still listened to.
            channels = [c for c in left if c not in self._listeners]
            if not channels:
                return
            for channel in channels:
                self._confirming.pop(channel, None)
            await pubsub.unsubscribe(*channels)

    async def _read(self, pubsub: Any) -> None:
        reason = "closed"
        try:
            while True:
                message = await pubsub.get_message(timeout=None)
                self._last_heard = time.monotonic()
                if message is None:
                    continue
                channel = message.get("channel")
                if isinstance(channel, bytes):
                    channel = channel.decode()
                kind = message.get("type")
                if kind == "subscribe":
                    confirmed = self._confirming.pop(channel, None)
                    if confirmed is not None and not confirmed.done():
                        confirmed.set_result(None)
                elif kind == "message":
                    self._dispatch(channel, message.get("data"))
        except asyncio.CancelledError:
            reason = "cancelled"
            raise
        except (RedisError, OSError, RuntimeError) as exc:
            reason = repr(exc)
        finally:
            self._fail(pubsub, reason)

    async def _beat(self, pubsub: Any) -> None:
        """PING now and then; a connection that stops answering is taken as broken.

        The answer comes back through the reader like any message. A peer that vanished
        without closing the connection would otherwise leave waits deaf until they end.
        """
        self._last_heard = time.monotonic()
        while pubsub is self._pubsub:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            if pubsub is not self._pubsub:
                return
            if time.monotonic() - self._last_heard > 2 * HEARTBEAT_SECONDS:
                self._fail(pubsub, "no answer to PING")
                return
            try:
                await pubsub.ping()
            except (RedisError, OSError) as exc:
                self._fail(pubsub, repr(exc))
                return

    def _dispatch(self, channel: str, data: Any) -> None:
        try:
            decoded = json.loads(data)
        except (TypeError, ValueError):
            log.warning("status_message_unreadable", channel=channel)
            return
        if not isinstance(decoded, dict):
            return
        for listener in tuple(self._listeners.get(channel, ())):
            listener._deliver(decoded)

    def _fail(self, pubsub: Any, reason: str) -> None:
        """The connection broke: every listener is told, the next join starts afresh."""
        if pubsub is not self._pubsub:
            return
        if self._listeners:
            log.warning("status_messages_interrupted", reason=reason, waits=len(self._listeners))
        for listeners in self._listeners.values():
            for listener in listeners:
                listener._deliver(_BROKEN)
        for confirmed in self._confirming.values():
            if not confirmed.done():
                confirmed.set_exception(ConnectionError(f"status messages: {reason}"))
                # Retrieved here: a join that gave up on it meanwhile does not warn.
                confirmed.exception()
        self._listeners.clear()
        self._confirming.clear()
        self._departed = set()
        reader, self._reader, self._pubsub = self._reader, None, None
        heartbeat, self._heartbeat = self._heartbeat, None
        for task in (reader, heartbeat):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        closing = asyncio.ensure_future(_close(pubsub))
        _leaving.add(closing)
        closing.add_done_callback(_left)


async def _close(pubsub: Any) -> None:
    with contextlib.suppress(Exception):
        await pubsub.aclose()


# Background leaves and closes still running (held so they are not collected half-way).
_leaving: set[asyncio.Future[None]] = set()


def _left(done: asyncio.Future[None]) -> None:
    _leaving.discard(done)
    if not done.cancelled() and done.exception() is not None:
        log.info("status_channel_not_left", reason=repr(done.exception()))


_subscribers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Subscriber] = (
    weakref.WeakKeyDictionary()
)


@contextlib.asynccontextmanager
async def listening(name: str) -> AsyncIterator[Listener | None]:
    """Listen to channel ``name`` for the block (None: Redis cannot be reached now)."""
    loop = asyncio.get_running_loop()
    subscriber = _subscribers.get(loop)
    if subscriber is None:
        subscriber = _subscribers[loop] = _Subscriber()
    channel = CHANNEL_PREFIX + name
    try:
        listener = await subscriber.join(channel)
    except (RedisError, OSError, TimeoutError) as exc:
        log.warning("status_channel_unavailable", channel=channel, reason=repr(exc))
        yield None
        return
    try:
        yield listener
    finally:
        subscriber.leave(channel, listener)


class _Background:
    """Messages sent without waiting go out in one thread per process, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pid = 0

    def submit(self, channel: str, payload: str) -> None:
        with self._lock:
            if self._executor is None or self._pid != os.getpid():  # a forked child
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="status-publish")
                self._pid = os.getpid()
            self._executor.submit(_send, channel, payload)


_background = _Background()


def _send(channel: str, payload: str) -> bool:
    try:
        redis_client().publish(channel, payload)
    except (RedisError, OSError) as exc:
        log.warning("live_message_not_sent", channel=channel, reason=repr(exc))
        return False
    return True


def publish(name: str, message: dict[str, Any], *, wait: bool = True) -> bool:
    """Publish ``message`` on channel ``name``; False (logged) when it could not be sent.

    With ``wait=False`` the caller goes on at once (True means handed over).
    """
    channel = CHANNEL_PREFIX + name
    payload = json.dumps(message, cls=JSONEncoder)
    if wait:
        return _send(channel, payload)
    _background.submit(channel, payload)
    return True


def publish_each(messages: list[tuple[str, dict[str, Any]]]) -> bool:
    """Publish each ``(name, message)`` in one round trip; False (logged) when they could
    not be sent. For many calls changing together (a person's decision on hundreds)."""
    if not messages:
        return True
    try:
        pipe = redis_client().pipeline(transaction=False)
        for name, message in messages:
            pipe.publish(CHANNEL_PREFIX + name, json.dumps(message, cls=JSONEncoder))
        pipe.execute()
    except (RedisError, OSError) as exc:
        log.warning("live_messages_not_sent", count=len(messages), reason=repr(exc))
        return False
    return True
