"""After `make run`, the README's `manage.py` commands work as printed: no SYNTHORG_ENV,
no traceback, and they act on the console `make run` started."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import httpx
import pytest

from common.testing import BASE_DIR, python_argv
from tests.acceptance.conftest import Console
from tests.acceptance.console import TRACEBACK, make_run_env


def _as_printed(var_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`.venv/bin/python manage.py ARGS` in a fresh shell beside `make run`: only the var/
    location is given (the harness's stand-in for the checkout's own var/)."""
    env = make_run_env(var_dir)
    del env["SYNTHORG_ENV"]
    return subprocess.run(
        python_argv("manage.py", *args),
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert TRACEBACK not in output, output
    return done.stdout


def test_an_agent_created_with_manage_py_calls_the_running_console(console: Console) -> None:
    name = f"readme-{uuid.uuid4().hex[:8]}"
    out = _ok(_as_printed(console.var_dir, "synthorg_agent", "create", name, "--level", "standard"))
    token = out.strip().splitlines()[-1]
    answer = httpx.get(
        console.base_url + "/api/v1/tools/",
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["tools"], answer.text


def test_a_person_created_with_manage_py_uses_the_api(console: Console) -> None:
    name = f"readme-op-{uuid.uuid4().hex[:8]}"
    out = _ok(
        _as_printed(
            console.var_dir, "synthorg_user", "create", name, "--role", "operator", "--token"
        )
    )
    token = out.strip().splitlines()[-1]
    answer = httpx.get(
        console.base_url + "/api/v1/approvals/",
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    "args",
    [
        ("synthorg_demo",),
        ("synthorg_config", "check"),
        ("synthorg_sandbox", "probe"),
        ("synthorg_audit", "verify"),
    ],
    ids=lambda args: " ".join(args),
)
def test_the_other_readme_commands_run(console: Console, args: tuple[str, ...]) -> None:
    _ok(_as_printed(console.var_dir, *args))


def test_a_var_no_console_ran_in_gets_a_clear_refusal(tmp_path: Path) -> None:
    """The control: without SYNTHORG_ENV and without a console started from this var/,
    the production default applies, refused with the reasons and the way out."""
    refused = _as_printed(tmp_path / "var", "synthorg_config", "check")
    assert refused.returncode == 1
    assert TRACEBACK not in refused.stderr, refused.stderr
    assert "refuses to start in production" in refused.stderr
    assert "SYNTHORG_ENV=dev" in refused.stderr
