"""Per-connection limits shared by every agent and worker, kept in Redis.

A connection has limits for every agent together and, optionally, for each agent on
its own. Rate limits are sliding windows (as ``tools_app.ratelimit``); a concurrency
limit is a set of slots, one per request in flight, each with its own expiry, so a
worker that dies mid-request frees its slot when the request's time limit has passed
rather than holding it for ever.

All of one request's limits are checked and taken in one Redis script: a request
refused by any of them counts against none, so an agent over its own limit never uses
up what the other agents may still send.
"""

from __future__ import annotations

import contextlib
import math
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from common.platform.redis import redis_client

# Seconds a slot outlives its request's own time limit before it counts as abandoned.
_SLOT_GRACE: Final = 30.0

Scope = Literal["agent", "everyone"]

# KEYS: the rate windows (ARGV[4] of them), then the slot sets.
# ARGV: now, member, expiry of new slots, number of windows, then limit and window
# seconds of each window, then the limit of each slot set.
# Returns, per key, '0' when it has room, else: for a window the seconds until its
# oldest request leaves it, for a slot set '-1'. Only when every key has room is the
# request counted in each window and given a slot in each set.
_ADMIT = """
local now, member, expires = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local windows = tonumber(ARGV[4])
local answers, refused = {}, false
for i, key in ipairs(KEYS) do
  local answer = '0'
  if i <= windows then
    local limit, window = tonumber(ARGV[3 + 2 * i]), tonumber(ARGV[4 + 2 * i])
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
    if redis.call('ZCARD', key) >= limit then
      local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
      answer = tostring(math.max(tonumber(oldest[2]) + window - now, 0.001))
    end
  else
    local limit = tonumber(ARGV[4 + 2 * windows + (i - windows)])
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    if redis.call('ZCARD', key) >= limit then
      answer = '-1'
    end
  end
  if answer ~= '0' then refused = true end
  answers[i] = answer
end
if not refused then
  for i, key in ipairs(KEYS) do
    if i <= windows then
      local window = tonumber(ARGV[4 + 2 * i])
      redis.call('ZADD', key, now, member)
      redis.call('PEXPIRE', key, math.ceil(window * 1000))
    else
      redis.call('ZADD', key, expires, member)
      redis.call('PEXPIREAT', key, math.ceil(expires * 1000))
    end
  end
end
return answers
"""


@dataclass(frozen=True, slots=True)
class RateLimit:
    """``limit`` requests per ``window_seconds``, of one agent or of every agent."""

    scope: Scope
    limit: int
    window_seconds: int


@dataclass(frozen=True, slots=True)
class ConcurrencyLimit:
    """``limit`` requests in flight at once, of one agent or of every agent."""

    scope: Scope
    limit: int


@dataclass(frozen=True, slots=True)
class Exceeded:
    """A limit a request was over; ``wait`` the whole seconds until a rate limit has room
    (None for a concurrency limit: room comes when a request in flight ends)."""

    limit: RateLimit | ConcurrencyLimit
    wait: int | None


def _key(kind: str, connection: str, scope: Scope, agent: str) -> str:
    # The all-agents keys are those earlier releases used, so an upgrade keeps counting.
    if kind == "rate":
        base = f"synthorg:rate:connection:{connection}"
    else:
        base = f"synthorg:connection-slots:{connection}"
    return base if scope == "everyone" else f"{base}:agent:{agent}"


@contextlib.contextmanager
def connection_admission(
    connection: str,
    agent: str,
    *,
    rates: Sequence[RateLimit],
    concurrency: Sequence[ConcurrencyLimit],
    hold_seconds: float,
) -> Iterator[tuple[Exceeded, ...]]:
    """Count one request of ``agent`` in each of ``rates`` and hold a slot of each of
    ``concurrency`` for the block. Yields the limits it is over (then nothing is counted
    or held), or ``()`` when it may go."""
    keys = [_key("rate", connection, r.scope, agent) for r in rates]
    keys += [_key("slots", connection, c.scope, agent) for c in concurrency]
    if not keys:
        yield ()
        return
    member = uuid.uuid4().hex
    client = redis_client()
    now = time.time()
    args: list[str | int | float] = [now, member, now + hold_seconds + _SLOT_GRACE, len(rates)]
    for rate in rates:
        args += [rate.limit, rate.window_seconds]
    args += [slots.limit for slots in concurrency]
    answers = [float(a) for a in client.eval(_ADMIT, len(keys), *keys, *args)]
    limits: list[RateLimit | ConcurrencyLimit] = [*rates, *concurrency]
    exceeded = tuple(
        Exceeded(limit, None if answer < 0 else max(1, math.ceil(answer)))
        for limit, answer in zip(limits, answers, strict=True)
        if answer != 0
    )
    slot_keys = keys[len(rates) :]
    try:
        yield exceeded
    finally:
        if not exceeded and slot_keys:
            pipe = client.pipeline(transaction=False)
            for key in slot_keys:
                pipe.zrem(key, member)
            pipe.execute()


@contextlib.contextmanager
def connection_slot(connection: str, *, limit: int, hold_seconds: float) -> Iterator[bool]:
    """Hold one of the connection's ``limit`` slots (every agent together) for the block;
    yields False (and holds nothing) when every slot is in use."""
    with connection_admission(
        connection,
        "",
        rates=(),
        concurrency=(ConcurrencyLimit("everyone", limit),),
        hold_seconds=hold_seconds,
    ) as exceeded:
        yield not exceeded
