"""One Redis client per process for the console's own keys (heartbeats, probes, limits)."""

from __future__ import annotations

import functools

import redis
from django.conf import settings


@functools.cache
def redis_client() -> redis.Redis:
    return redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2, health_check_interval=30
    )
