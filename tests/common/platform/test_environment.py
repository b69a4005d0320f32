"""The SYNTHORG_* settings model: defaults kept, bad values refused with name, value and range."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from common.platform.environment import (
    EnvironmentSettingError,
    PlatformEnvironment,
    load_environment,
)
from common.testing import BASE_DIR, python_argv


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The model is tested against its own defaults, not this run's overrides.
    for name in PlatformEnvironment.model_fields:
        monkeypatch.delenv(name, raising=False)


def test_defaults_are_the_consoles_defaults() -> None:
    env = load_environment()
    assert env.SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE == 1200
    assert env.SYNTHORG_MAX_REQUEST_BYTES == 1024 * 1024
    assert env.SYNTHORG_REDIS_SOCKET_TIMEOUT == 15.0
    assert env.SYNTHORG_HEARTBEAT_INTERVAL == 2.0
    assert env.SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES == 4 * 1_048_576
    assert env.SYNTHORG_INBOX_FRAME_BYTES == 256 * 1024
    assert env.SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_MAX_SECONDS == 30 * 86400
    assert env.SYNTHORG_EGRESS_MAX_BYTES_PER_CONNECTION == 1024**3
    assert env.SYNTHORG_METRICS_ALLOW_LOOPBACK is True
    assert env.SYNTHORG_BRIDGE_HOLD_SEVERITY == "high"
    assert env.SYNTHORG_METRICS_CALL_BUCKETS[-1] == 900.0
    # Defaults that depend on other settings are left to settings.py.
    assert env.SYNTHORG_CONSOLE_URL is None
    assert isinstance(env.SYNTHORG_JSON_MAX_DEPTH, int)
    assert isinstance(env.SYNTHORG_MCP_CANCEL_SKEW_SECONDS, float)


def test_every_number_has_a_range() -> None:
    unbounded = [
        name
        for name, field in PlatformEnvironment.model_fields.items()
        if field.annotation in (int, float) and not field.metadata
    ]
    assert unbounded == []


def test_a_valid_override_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE", "1000000")
    monkeypatch.setenv("SYNTHORG_HEARTBEAT_INTERVAL", "0.5")
    monkeypatch.setenv("SYNTHORG_METRICS_ALLOW_LOOPBACK", "off")
    monkeypatch.setenv("SYNTHORG_METRICS_LATENCY_BUCKETS", "0.1,1,10")
    env = load_environment()
    assert env.SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE == 1_000_000
    assert env.SYNTHORG_HEARTBEAT_INTERVAL == 0.5
    assert env.SYNTHORG_METRICS_ALLOW_LOOPBACK is False
    assert env.SYNTHORG_METRICS_LATENCY_BUCKETS == [0.1, 1.0, 10.0]


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        (
            "SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE",
            "-1",
            "SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE=-1 is not allowed: "
            "must be a whole number >= 1 and <= 10000000",
        ),
        (
            "SYNTHORG_EGRESS_DNS_PORT",
            "70000",
            "SYNTHORG_EGRESS_DNS_PORT=70000 is not allowed: "
            "must be a whole number >= 1 and <= 65535",
        ),
        (
            "SYNTHORG_HEARTBEAT_INTERVAL",
            "0",
            "SYNTHORG_HEARTBEAT_INTERVAL=0 is not allowed: must be a number > 0 and <= 300",
        ),
    ],
)
def test_an_out_of_range_value_is_refused_naming_variable_value_and_range(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(EnvironmentSettingError) as refused:
        load_environment()
    assert str(refused.value) == expected


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SYNTHORG_BATCH_MAX_CALLS", "fifty"),
        ("SYNTHORG_BATCH_MAX_CALLS", "1.5"),
        ("SYNTHORG_REDIS_COMMAND_TIMEOUT", "nan"),
        ("SYNTHORG_REDIS_COMMAND_TIMEOUT", "2s"),
        ("SYNTHORG_METRICS_ALLOW_LOOPBACK", "maybe"),
        ("SYNTHORG_METRICS_CALL_BUCKETS", "1,x"),
        ("SYNTHORG_METRICS_CALL_BUCKETS", "5,1"),
    ],
)
def test_a_value_of_the_wrong_kind_is_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(EnvironmentSettingError) as refused:
        load_environment()
    assert str(refused.value).startswith(f"{name}={value} is not allowed: must be ")


def test_every_bad_variable_is_named_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYNTHORG_BATCH_MAX_CALLS", "0")
    monkeypatch.setenv("SYNTHORG_JSON_MAX_DEPTH", "-3")
    with pytest.raises(EnvironmentSettingError) as refused:
        load_environment()
    lines = str(refused.value).splitlines()
    assert [line.split("=")[0] for line in lines] == [
        "SYNTHORG_BATCH_MAX_CALLS",
        "SYNTHORG_JSON_MAX_DEPTH",
    ]


def test_a_rotation_overlap_past_its_maximum_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_MAX_SECONDS", "60")
    with pytest.raises(EnvironmentSettingError, match="ROTATION_OVERLAP_SECONDS=3600"):
        load_environment()


def test_trusted_proxies_are_addresses_or_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_environment().SYNTHORG_TRUSTED_PROXIES == []
    monkeypatch.setenv("SYNTHORG_TRUSTED_PROXIES", "127.0.0.1, 10.1.0.0/16,,::1")
    assert load_environment().SYNTHORG_TRUSTED_PROXIES == ["127.0.0.1", "10.1.0.0/16", "::1"]
    monkeypatch.setenv("SYNTHORG_TRUSTED_PROXIES", "127.0.0.1,proxy.internal")
    with pytest.raises(EnvironmentSettingError) as refused:
        load_environment()
    assert str(refused.value).startswith(
        "SYNTHORG_TRUSTED_PROXIES=127.0.0.1,proxy.internal is not allowed: must be "
        "comma-separated IP addresses or networks"
    )


def test_a_first_sign_in_lock_past_the_longest_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SYNTHORG_SIGNIN_LOCK_MAX_SECONDS", "30")
    with pytest.raises(EnvironmentSettingError, match="SYNTHORG_SIGNIN_LOCK_SECONDS=60"):
        load_environment()
    monkeypatch.setenv("SYNTHORG_SIGNIN_LOCK_SECONDS", "30")
    assert load_environment().SYNTHORG_SIGNIN_LOCK_SECONDS == 30


def test_django_refuses_to_start_with_a_bad_value(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in PlatformEnvironment.model_fields}
    env.update(
        SYNTHORG_ENV="test",
        SYNTHORG_VAR_DIR=str(tmp_path / "var"),
        SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE="-5",
    )
    result = subprocess.run(
        python_argv("manage.py", "check"),
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE=-5 is not allowed: must be" in result.stderr


def test_a_machine_name_is_one_a_queue_name_can_carry(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_environment().SYNTHORG_MACHINE == ""
    for bad in ("two words", "m1,m2", "a" * 65, "m/1", "ｍ1"):
        monkeypatch.setenv("SYNTHORG_MACHINE", bad)
        with pytest.raises(EnvironmentSettingError) as refused:
            load_environment()
        assert str(refused.value).startswith(f"SYNTHORG_MACHINE={bad} is not allowed"), bad
    # Control: letters, digits, dots, dashes and underscores.
    monkeypatch.setenv("SYNTHORG_MACHINE", "worker-2.rack_a")
    assert load_environment().SYNTHORG_MACHINE == "worker-2.rack_a"
