"""manage.py synthorg_audit's key commands run before any key exists (production too),
and a malformed SYNTHORG_AUDIT_KEYS refuses to start, naming the variable and the form."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from common.testing import BASE_DIR, python_argv

GOOD_KEY = "k1:" + "s" * 40


def _manage(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **{k: v for k, v in os.environ.items() if k != "SYNTHORG_AUDIT_KEYS"},
        "SYNTHORG_VAR_DIR": str(tmp_path / "var"),
        **env,
    }
    return subprocess.run(
        python_argv("manage.py", *args), cwd=BASE_DIR, env=environment, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip


def _production(**env: str) -> dict[str, str]:
    return {
        "SYNTHORG_ENV": "production", "DEBUG": "false", "SECRET_KEY": "x7" * 40,
        "ALLOWED_HOSTS": "console.example", "DATABASE_URL": "sqlite:////nonexistent/db", **env,
    }  # fmt: skip


def test_new_key_runs_in_production_before_any_key_exists(tmp_path: Path) -> None:
    result = _manage(tmp_path, "synthorg_audit", "new-key", **_production())
    assert result.returncode == 0, result.stderr
    entry = result.stdout.strip().splitlines()[-1]
    key_id, _, secret = entry.partition(":")
    assert key_id.startswith("ak") and len(secret) >= 32
    assert not (tmp_path / "var" / "audit_keys").exists()  # printed, never stored
    # Positive control: the console itself still refuses to start without the key...
    check = _manage(tmp_path, "check", **_production())
    assert check.returncode != 0 and "SYNTHORG_AUDIT_KEYS is not set" in check.stderr
    # ...and starts with the entry new-key printed.
    check = _manage(tmp_path, "check", **_production(SYNTHORG_AUDIT_KEYS=entry))
    assert check.returncode == 0, check.stderr


def test_rotate_key_in_production_without_keys_says_what_to_do(tmp_path: Path) -> None:
    result = _manage(tmp_path, "synthorg_audit", "rotate-key", **_production())
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "synthorg_audit new-key" in result.stderr and "SYNTHORG_AUDIT_KEYS" in result.stderr


def test_a_malformed_key_is_refused_at_start_naming_the_variable(tmp_path: Path) -> None:
    secret = "tooshortsecret"
    for value, wrong in (
        (f"k1:{secret}", "key 'k1' is shorter than 32 characters"),
        ("s" * 40, "entry 1 is not ID:SECRET"),
        (f"{GOOD_KEY},k2 bad:{'t' * 40}", "entry 2 is not ID:SECRET"),
    ):
        result = _manage(tmp_path, "check", SYNTHORG_AUDIT_KEYS=value)
        assert result.returncode != 0, value
        assert "SYNTHORG_AUDIT_KEYS is malformed" in result.stderr, result.stderr
        assert wrong in result.stderr and "Allowed form: comma-separated ID:SECRET" in result.stderr
        assert secret not in result.stderr and "t" * 40 not in result.stderr
    # new-key still runs, to make the entry that replaces the malformed one.
    made = _manage(tmp_path, "synthorg_audit", "new-key", SYNTHORG_AUDIT_KEYS=f"k1:{secret}")
    assert made.returncode == 0, made.stderr
    # Positive control: a well-formed entry passes the same check.
    result = _manage(tmp_path, "check", SYNTHORG_AUDIT_KEYS=GOOD_KEY)
    assert result.returncode == 0, result.stderr
