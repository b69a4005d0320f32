"""Attack tests: the sandbox walls and the console's private state, tried from outside."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.testing import require
from tests.tools_app.api.conftest import make_agent
from tests.tools_app.sandbox.conftest import docker_client, make_workspace
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.backends.namespace_probe import probe_namespace
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.protocol import SandboxBackend

__all__ = ["docker_client", "make_agent"]

BACKENDS = ("subprocess", "namespace", "docker")


@pytest.fixture(scope="session", autouse=True)
def _sandbox_user() -> None:
    require(os.geteuid() == 0, "the attack tests switch to the sandbox user (run as root)")
    script = Path(__file__).resolve().parents[2] / "docker" / "ensure-sandbox-user.sh"
    os.system(f"sh {script} >/dev/null")


@pytest.fixture
def own_workspace() -> Iterator[Path]:
    """The attacking agent's workspace (hello.txt inside)."""
    path = make_workspace(writable=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def other_workspace() -> Iterator[Path]:
    """Another agent's workspace, granted to the same sandbox user as every workspace."""
    path = make_workspace(writable=True)
    (path / "other-agent.txt").write_text("another agent's work\n")
    os.chmod(path / "other-agent.txt", 0o664)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[SandboxBackend]:
    """Each backend for real (a missing one fails the test, unless skips are allowed)."""
    built: SandboxBackend
    if request.param == "subprocess":
        built = SubprocessSandbox()
    elif request.param == "namespace":
        namespace = NamespaceSandbox()
        require(namespace.bwrap_path is not None, "bubblewrap (bwrap) is not installed")
        ok, reason = probe_namespace(namespace)
        require(ok, f"namespaces cannot be created here: {reason}")
        built = namespace
    else:
        from tools_app.sandbox.backends.docker.backend import DockerSandbox, DockerSettings

        request.getfixturevalue("docker_client")
        built = DockerSandbox(DockerSettings())
    yield built
    built.close()
