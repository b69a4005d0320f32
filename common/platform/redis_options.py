"""How every Redis client of the console talks to Redis: timeouts chosen, not inherited.

The redis-py default read timeout (5 s) equals the channel layer's blocking read
(BZPOPMIN for 5 s), so a wait for a person that outlasted one blocking read
raised a read timeout instead of reading the empty answer. Every client here
gets its timeouts from settings, and a read timeout at or below the blocking
read is refused at start. Pure: no Django imports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# A blocking read answers this long after its own timeout at most (a busy server,
# a loaded machine); the socket's read timeout must leave at least this margin.
BLOCKING_READ_MARGIN_SECONDS = 2.0


class RedisTimeoutSettingError(ValueError):
    """A Redis timeout setting that would cut blocking reads short."""


@dataclass(frozen=True)
class RedisTimeouts:
    """Seconds: a read may take ``socket_timeout``; a connect ``connect_timeout``;
    an idle connection is checked with PING after ``health_check_interval``."""

    socket_timeout: float
    connect_timeout: float
    health_check_interval: float


def redis_timeouts(
    *,
    socket_timeout: float,
    connect_timeout: float,
    health_check_interval: float,
    blocking_read: float,
) -> RedisTimeouts:
    """Validated timeouts: the read timeout outlasts the longest blocking read."""
    least = blocking_read + BLOCKING_READ_MARGIN_SECONDS
    if socket_timeout < least:
        raise RedisTimeoutSettingError(
            f"SYNTHORG_REDIS_SOCKET_TIMEOUT={socket_timeout:g} is too short: the channel "
            f"layer blocks on Redis for {blocking_read:g}s, so it must be at least {least:g}"
        )
    if connect_timeout <= 0:
        raise RedisTimeoutSettingError(
            f"SYNTHORG_REDIS_CONNECT_TIMEOUT={connect_timeout:g} must be above 0 seconds"
        )
    if health_check_interval < 0:
        raise RedisTimeoutSettingError(
            f"SYNTHORG_REDIS_HEALTH_CHECK_INTERVAL={health_check_interval:g} must be 0 "
            "(off) or more seconds"
        )
    return RedisTimeouts(socket_timeout, connect_timeout, health_check_interval)


def _is_tcp(url: str) -> bool:
    return url.startswith(("redis://", "rediss://"))


def client_options(url: str, timeouts: RedisTimeouts) -> dict[str, Any]:
    """redis-py connection keyword arguments for a client of ``url``."""
    options: dict[str, Any] = {
        "socket_timeout": timeouts.socket_timeout,
        "socket_connect_timeout": timeouts.connect_timeout,
        "health_check_interval": timeouts.health_check_interval,
    }
    if _is_tcp(url):
        # A peer gone without a FIN (failover, NAT) is noticed by the kernel.
        options["socket_keepalive"] = True
    return options


def channel_layer_host(url: str, timeouts: RedisTimeouts) -> dict[str, Any]:
    """One `hosts` entry of channels-redis: its pool is built from these options."""
    return {"address": url, **client_options(url, timeouts)}


def broker_transport_options(url: str, timeouts: RedisTimeouts) -> dict[str, Any]:
    """Kombu's Redis transport options (it spells the same redis-py arguments)."""
    return client_options(url, timeouts)
