"""Fixtures for the sandbox tests: real workspaces, real processes, no mocks.

Tests that need bubblewrap or a Docker engine fail loudly when it is missing;
set SYNTHORG_TEST_ALLOW_SKIP=1 to skip them with the reason instead.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.testing import require
from common.vocabulary.sandbox import DEFAULT_SANDBOX_USER
from tools_app.sandbox.linux.identity import resolve_identity
from tools_app.sandbox.workspace import grant_workspace

WORKSPACE_ROOT = Path("/tmp/synthorg-test-workspaces")


@pytest.fixture(scope="session", autouse=True)
def _sandbox_user() -> None:
    if os.geteuid() == 0:
        require(
            shutil.which("useradd") is not None or _user_exists(DEFAULT_SANDBOX_USER),
            "useradd is needed to create the sandbox user",
        )
        script = Path(__file__).resolve().parents[3] / "docker" / "ensure-sandbox-user.sh"
        os.system(f"sh {script} >/dev/null")


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def make_workspace(*, writable: bool) -> Path:
    """A fresh workspace under a world-searchable root, granted to the sandbox user."""
    WORKSPACE_ROOT.mkdir(mode=0o755, exist_ok=True)
    os.chmod(WORKSPACE_ROOT, 0o755)
    path = WORKSPACE_ROOT / f"ws-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o755)
    os.chmod(path, 0o755)
    (path / "hello.txt").write_text("hello from the workspace\n")
    os.chmod(path / "hello.txt", 0o644)
    identity = resolve_identity(DEFAULT_SANDBOX_USER, backend="test")
    if writable:
        grant_workspace(path, identity, writable=True)
    return path


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A workspace the sandbox user may read and write."""
    path = make_workspace(writable=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def ro_workspace() -> Iterator[Path]:
    """A workspace the sandbox user may only read."""
    path = make_workspace(writable=False)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def outside_dir() -> Iterator[Path]:
    """A directory outside every workspace, owned by the worker, world-readable."""
    WORKSPACE_ROOT.mkdir(mode=0o755, exist_ok=True)
    path = WORKSPACE_ROOT / f"outside-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o755)
    os.chmod(path, 0o755)
    (path / "secret.txt").write_text("top secret outside the workspace\n")
    os.chmod(path / "secret.txt", 0o600)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def docker_engine():
    """A client for the engine at DOCKER_HOST, with the sandbox image built."""
    from tools_app.sandbox.backends.docker.engine import connect
    from tools_app.sandbox.backends.docker.image import build_sandbox_image

    try:
        client = connect(None)
        client.ping()
    except Exception as exc:  # the reason is the point of the message
        require(False, f"no Docker engine at DOCKER_HOST={os.environ.get('DOCKER_HOST')}: {exc}")
        raise
    build_sandbox_image(client=client)
    return client


@pytest.fixture(scope="session")
def docker_client():
    """The engine the docker tests run against (fails loudly when missing)."""
    client = docker_engine()
    yield client
    client.close()
