"""One Redis client per process for the console's own keys (heartbeats, probes, limits)."""

from __future__ import annotations

import functools

import redis
from django.conf import settings


@functools.cache
def redis_client() -> redis.Redis:
    timeouts = settings.REDIS_TIMEOUTS
    return redis.Redis.from_url(
        settings.REDIS_URL,
        # Only short commands go through this client: fail fast rather than hang.
        socket_timeout=settings.SYNTHORG_REDIS_COMMAND_TIMEOUT,
        socket_connect_timeout=timeouts.connect_timeout,
        health_check_interval=timeouts.health_check_interval,
    )
