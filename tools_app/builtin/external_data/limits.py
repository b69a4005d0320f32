"""Per-connection limits shared by every agent and worker, kept in Redis.

The rate limit is the console's sliding window (``tools_app.ratelimit``). The
concurrency limit is a set of slots, one per request in flight; a slot carries its
own expiry, so a worker that dies mid-request frees it when its request's time
limit has passed rather than holding it for ever.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Final

from common.platform.redis import redis_client
from tools_app.ratelimit import rate_limit_hit

# Seconds a slot outlives its request's own time limit before it counts as abandoned.
_SLOT_GRACE: Final = 30.0

# KEYS[1] the slots; ARGV: now, expiry of the new slot, limit, member.
# Returns 1 when a slot is taken, 0 when all are in use.
_TAKE_SLOT = """
local key, now, expires, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
if redis.call('ZCARD', key) >= limit then
  return 0
end
redis.call('ZADD', key, expires, ARGV[4])
redis.call('PEXPIREAT', key, math.ceil(expires * 1000))
return 1
"""


def connection_rate_hit(connection: str, *, limit: int, window_seconds: int) -> int:
    """Count one request; 0 when it may go, else the whole seconds until one may."""
    return rate_limit_hit(f"connection:{connection}", limit=limit, window_seconds=window_seconds)


@contextlib.contextmanager
def connection_slot(connection: str, *, limit: int, hold_seconds: float) -> Iterator[bool]:
    """Hold one of the connection's ``limit`` slots for the block; yields False (and
    holds nothing) when every slot is in use."""
    key = f"synthorg:connection-slots:{connection}"
    member = uuid.uuid4().hex
    client = redis_client()
    now = time.time()
    taken = bool(
        int(client.eval(_TAKE_SLOT, 1, key, now, now + hold_seconds + _SLOT_GRACE, limit, member))
    )
    try:
        yield taken
    finally:
        if taken:
            client.zrem(key, member)
