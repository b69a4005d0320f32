"""Settings from the environment; production refuses unsafe settings and names each one."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from common.platform.safety import ProductionSettings, unsafe_production_settings
from common.testing import BASE_DIR, python_argv


def _check(env_overrides: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "ALLOWED_HOSTS"}}
    env.update({"SYNTHORG_VAR_DIR": str(tmp_path / "var")}, **env_overrides)
    return subprocess.run(
        python_argv("manage.py", "check"),
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_refuses_to_start_and_names_every_unsafe_setting(tmp_path: Path) -> None:
    env = {"SYNTHORG_ENV": "production", "DEBUG": "true", "ALLOWED_HOSTS": "*"}
    result = _check(env, tmp_path)
    assert result.returncode != 0
    for name in (
        "DEBUG is on",
        "SECRET_KEY is not set",
        "ALLOWED_HOSTS contains '*'",
        "SYNTHORG_AUDIT_KEYS is not set",
    ):
        assert name in result.stderr, result.stderr


def test_production_starts_with_safe_settings(tmp_path: Path) -> None:
    env = {
        "SYNTHORG_ENV": "production",
        "SECRET_KEY": "k" * 20 + "x7Qp-random-enough-for-a-test-0123456789abcdef",
        "ALLOWED_HOSTS": "console.example.org",
        "SYNTHORG_AUDIT_KEYS": "ak-test:" + "a7Rq" * 10,
        "DATABASE_URL": os.environ.get("DATABASE_URL") or f"sqlite:///{tmp_path}/db.sqlite3",
    }
    result = _check(env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "refuses" not in result.stderr


def test_weak_secret_key_and_missing_database_are_named() -> None:
    problems = unsafe_production_settings(
        ProductionSettings(
            debug=False,
            secret_key_from_env=True,
            secret_key="django-insecure-short",
            allowed_hosts=["console.example.org"],
            database_url_set=False,
        )
    )
    assert [p.split(":")[0] for p in problems] == ["SECRET_KEY is weak", "DATABASE_URL is not set"]


def test_dev_generates_the_secret_key_once_and_keeps_it_private(tmp_path: Path) -> None:
    env = {"SYNTHORG_ENV": "dev"}
    assert _check(env, tmp_path).returncode == 0
    key_file = tmp_path / "var" / "secret_key"
    first = key_file.read_text()
    assert len(first) >= 50
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert _check(env, tmp_path).returncode == 0
    assert key_file.read_text() == first


def test_unknown_mode_is_refused(tmp_path: Path) -> None:
    result = _check({"SYNTHORG_ENV": "prod"}, tmp_path)
    assert result.returncode != 0
    assert "dev, test, production" in result.stderr
