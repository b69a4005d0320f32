"""Redis timeouts are settings, checked at start against the channel layer's blocking read."""

from __future__ import annotations

import os
import subprocess
from typing import Any

import pytest
from channels_redis.core import RedisChannelLayer
from django.conf import settings

from common.platform.redis_options import (
    BLOCKING_READ_MARGIN_SECONDS,
    RedisTimeouts,
    RedisTimeoutSettingError,
    broker_transport_options,
    channel_layer_host,
    client_options,
    redis_timeouts,
)
from common.testing import BASE_DIR, python_argv

TIMEOUTS = RedisTimeouts(socket_timeout=15, connect_timeout=5, health_check_interval=30)


def test_a_read_timeout_shorter_than_the_blocking_read_is_refused() -> None:
    with pytest.raises(RedisTimeoutSettingError, match="SYNTHORG_REDIS_SOCKET_TIMEOUT=5 "):
        redis_timeouts(
            socket_timeout=5, connect_timeout=5, health_check_interval=30, blocking_read=5
        )
    least = 5 + BLOCKING_READ_MARGIN_SECONDS
    accepted = redis_timeouts(
        socket_timeout=least, connect_timeout=5, health_check_interval=30, blocking_read=5
    )
    assert accepted.socket_timeout == least


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("connect_timeout", 0, "SYNTHORG_REDIS_CONNECT_TIMEOUT"),
        ("health_check_interval", -1, "SYNTHORG_REDIS_HEALTH_CHECK_INTERVAL"),
    ],
)
def test_other_nonsense_timeouts_are_refused(field: str, value: float, named: str) -> None:
    values = {"socket_timeout": 15.0, "connect_timeout": 5.0, "health_check_interval": 30.0}
    values[field] = value
    with pytest.raises(RedisTimeoutSettingError, match=named):
        redis_timeouts(**values, blocking_read=5)


def test_tcp_clients_keep_alive_and_unix_socket_clients_do_not() -> None:
    tcp = client_options("redis://127.0.0.1:6379/0", TIMEOUTS)
    unix = client_options("unix:///run/redis.sock?db=0", TIMEOUTS)
    assert tcp == {
        "socket_timeout": 15,
        "socket_connect_timeout": 5,
        "health_check_interval": 30,
        "socket_keepalive": True,
    }
    # redis-py's unix socket connection takes no keepalive argument.
    assert unix == {k: v for k, v in tcp.items() if k != "socket_keepalive"}
    assert channel_layer_host("redis://h:1/0", TIMEOUTS) == {"address": "redis://h:1/0", **tcp}
    assert broker_transport_options("redis://h:1/0", TIMEOUTS) == tcp


def test_every_redis_client_gets_the_settings_not_the_library_defaults() -> None:
    timeouts = settings.REDIS_TIMEOUTS
    assert timeouts.socket_timeout > RedisChannelLayer.brpop_timeout
    (host,) = settings.CHANNEL_LAYERS["default"]["CONFIG"]["hosts"]  # type: ignore[index]
    assert host["socket_timeout"] == timeouts.socket_timeout
    assert host["health_check_interval"] == timeouts.health_check_interval
    cache: dict[str, Any] = dict(settings.CACHES["default"])
    assert cache["OPTIONS"]["socket_timeout"] == timeouts.socket_timeout
    from synthorg_site.celery import app

    options = app.conf.broker_transport_options
    assert options["socket_timeout"] == timeouts.socket_timeout
    assert options["visibility_timeout"] == 3600


def test_the_console_refuses_to_start_with_a_read_timeout_under_the_blocking_read() -> None:
    env = {**os.environ, "SYNTHORG_REDIS_SOCKET_TIMEOUT": "5"}
    refused = subprocess.run(
        python_argv("manage.py", "check"), cwd=BASE_DIR, env=env, capture_output=True, text=True
    )
    assert refused.returncode != 0
    assert "SYNTHORG_REDIS_SOCKET_TIMEOUT=5 is too short" in refused.stderr
    env["SYNTHORG_REDIS_SOCKET_TIMEOUT"] = "20"
    accepted = subprocess.run(
        python_argv("manage.py", "check"), cwd=BASE_DIR, env=env, capture_output=True, text=True
    )
    assert accepted.returncode == 0, accepted.stderr
