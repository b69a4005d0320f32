"""manage.py synthorg_config check: valid files pass; each typo is named with the allowed values."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from common.testing import BASE_DIR, python_argv


def _check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        python_argv("manage.py", "synthorg_config", "check", str(path)),
        cwd=BASE_DIR, env=dict(os.environ), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_valid_file_passes(tmp_path: Path) -> None:
    config = tmp_path / "ok.yaml"
    config.write_text(
        "tool_access:\n  levels:\n    standard:\n      network: allowlist_only\n"
        "tools:\n  read_file:\n    max_read_bytes: 4096\n"
    )
    result = _check(config)
    assert result.returncode == 0, result.stderr
    assert "valid" in result.stdout and "tools:" in result.stdout


def test_typos_exit_1_naming_file_field_and_allowed_values(tmp_path: Path) -> None:
    config = tmp_path / "typos.yaml"
    config.write_text("tool_access:\n  levels:\n    standrd:\n      network: opn\n")
    result = _check(config)
    assert result.returncode == 1
    assert f"{config}: tool_access.levels.standrd" in result.stderr
    assert "'standard'" in result.stderr and "'sandboxed'" in result.stderr


def test_unknown_tool_settings_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "tools.yaml"
    config.write_text("tools:\n  read_file:\n    max_reed_bytes: 1\n  reed_file: {}\n")
    result = _check(config)
    assert result.returncode == 1
    assert "tools.read_file.max_reed_bytes: unknown setting" in result.stderr
    assert "max_read_bytes" in result.stderr
    assert "tools.reed_file: no such tool" in result.stderr


def test_a_bad_tool_setting_value_names_the_checked_file_and_the_range(tmp_path: Path) -> None:
    config = tmp_path / "values.yaml"
    config.write_text("tools:\n  shell_command:\n    max_timeout_seconds: -5\n")
    result = _check(config)
    assert result.returncode == 1
    assert f"{config}: tools.shell_command.max_timeout_seconds: -5 is not allowed" in result.stderr
    # Control: the same setting in range passes.
    config.write_text("tools:\n  shell_command:\n    max_timeout_seconds: 5\n")
    assert _check(config).returncode == 0


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    result = _check(tmp_path / "absent.yaml")
    assert result.returncode == 1
    assert "no such file" in result.stderr


def test_a_broken_active_config_stops_the_console(tmp_path: Path) -> None:
    config = tmp_path / "broken.yaml"
    config.write_text(
        "approval:\n  rules:\n    - match: {action_type: 'code:wrte'}\n"
        "      disposition: auto_approve\n"
    )
    env = dict(os.environ, SYNTHORG_CONFIG=str(config))
    result = subprocess.run(
        python_argv("manage.py", "check"), cwd=BASE_DIR, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode != 0
    assert "code:wrte" in result.stderr
