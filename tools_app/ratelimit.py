"""Sliding-window rate limits kept in Redis, atomic across web nodes."""

from __future__ import annotations

import math
import time
import uuid

from common.platform.redis import redis_client

# KEYS[1] the window; ARGV: now, window seconds, limit, member.
# Returns 0 when the hit is admitted, else the seconds until the oldest hit leaves.
_SLIDING_WINDOW = """
local key, now, window, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) >= limit then
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return tostring(tonumber(oldest[2]) + window - now)
end
redis.call('ZADD', key, now, ARGV[4])
redis.call('PEXPIRE', key, math.ceil(window * 1000))
return '0'
"""


def rate_limit_hit(key: str, *, limit: int, window_seconds: float) -> int:
    """Count one hit; 0 when it is allowed, else the whole seconds to wait (Retry-After)."""
    if limit <= 0:
        return 0
    client = redis_client()
    wait = float(
        client.eval(
            _SLIDING_WINDOW,
            1,
            f"synthorg:rate:{key}",
            time.time(),
            window_seconds,
            limit,
            uuid.uuid4().hex,
        )
    )
    return 0 if wait <= 0 else max(1, math.ceil(wait))
