"""Acceptance fixtures: one console per session, started exactly as `make run` starts it.

Tests here use only the console's public doors (REST, MCP, websockets, the
browser) and never the suite's test database or its Celery worker.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.acceptance.console import (
    TRACEBACK,
    Credentials,
    Launcher,
    agent_client,
    copy_var,
    prepare_var,
    sign_in,
    start_launcher,
    stop_launcher,
)


@dataclass
class Console:
    """The running console: where it answers, who may sign in, its var/ and launcher."""

    launcher: Launcher
    credentials: Credentials

    @property
    def base_url(self) -> str:
        return self.launcher.base_url

    @property
    def var_dir(self) -> Path:
        return self.launcher.var_dir

    def person(self, role: str) -> httpx.Client:
        """A signed-in session (with CSRF) for the demo person holding ``role``; close it."""
        username, password = self.credentials.people[role]
        return sign_in(self.base_url, username, password)

    def agent(self, name: str) -> httpx.Client:
        """An HTTP client carrying the demo agent's bearer token."""
        return agent_client(self.base_url, self.credentials.agents[name])


@pytest.fixture(scope="session")
def acceptance_root() -> Iterator[Path]:
    """Where the consoles keep their var/: a directory the sandbox user may pass through
    on the way to an agent's workspace (pytest's own temporary root is private)."""
    root = Path(tempfile.mkdtemp(prefix="synthorg-acceptance."))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _private_dir(root: Path, prefix: str) -> Path:
    made = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    made.chmod(0o755)
    return made


@pytest.fixture(scope="session")
def prepared_var(acceptance_root: Path) -> Path:
    """A var/ after `make run`'s migrate and synthorg_demo; copied, never run in."""
    var_dir = _private_dir(acceptance_root, "make-run.") / "var"
    prepare_var(var_dir)
    return var_dir


@pytest.fixture(scope="session")
def console(prepared_var: Path, acceptance_root: Path) -> Iterator[Console]:
    """The shared console of the session; stopped at the end, every process of it gone."""
    root = _private_dir(acceptance_root, "console.")
    copy_var(prepared_var, root / "var")
    launcher = start_launcher(root / "var", root / "launcher.log")
    try:
        launcher.wait_healthy()
        yield Console(
            launcher=launcher, credentials=Credentials.read(root / "var" / "demo-credentials.txt")
        )
        code = stop_launcher(launcher, signal.SIGTERM)
        assert code == 0, launcher.output()[-6000:]
        assert TRACEBACK not in launcher.own_output(), launcher.output()[-6000:]
    finally:
        launcher.kill_everything()


@pytest.fixture
def fresh_launcher(prepared_var: Path, acceptance_root: Path) -> Iterator[Callable[[], Launcher]]:
    """Start launchers of the test's own (each in a fresh copy of the prepared var/)."""
    started: list[Launcher] = []
    tmp_path = _private_dir(acceptance_root, "launchers.")

    def start() -> Launcher:
        var_dir = tmp_path / f"var-{len(started)}"
        copy_var(prepared_var, var_dir)
        launcher = start_launcher(var_dir, tmp_path / f"launcher-{len(started)}.log")
        started.append(launcher)
        return launcher

    yield start
    for launcher in started:
        launcher.kill_everything()


@pytest.fixture(scope="session")
def operator(console: Console) -> Iterator[httpx.Client]:
    http = console.person("operator")
    yield http
    http.close()


@pytest.fixture(scope="session")
def admin(console: Console) -> Iterator[httpx.Client]:
    http = console.person("admin")
    yield http
    http.close()


@pytest.fixture(scope="session")
def auditor(console: Console) -> Iterator[httpx.Client]:
    http = console.person("auditor")
    yield http
    http.close()
