"""Shared fixtures for the file, terminal and code tool tests: real workspaces and sandboxes.

Import the fixtures a module needs (``from ...fs_fixtures import workspace``);
pytest finds them in the importing module. Backends are the real ones; a
missing bubblewrap fails the test unless SYNTHORG_TEST_ALLOW_SKIP=1.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from common.testing import require
from common.vocabulary.sandbox import DEFAULT_SANDBOX_USER
from tools_app.builtin.base import ToolContext
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.backends.namespace_probe import probe_namespace
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.linux.identity import resolve_identity
from tools_app.sandbox.protocol import (
    Owner,
    ProbeReport,
    SandboxBackend,
    SandboxResult,
    SandboxSpec,
)
from tools_app.sandbox.workspace import grant_workspace

WORKSPACE_ROOT = Path("/tmp/synthorg-test-workspaces")
ENSURE_USER_SCRIPT = Path(__file__).resolve().parents[3] / "docker" / "ensure-sandbox-user.sh"


def ensure_sandbox_user() -> None:
    """Create the unprivileged sandbox user when the tests run as root."""
    if os.geteuid() == 0:
        os.system(f"sh {ENSURE_USER_SCRIPT} >/dev/null")


def grant(path: Path) -> None:
    """Let the sandbox user read and write everything now in ``path``."""
    identity = resolve_identity(DEFAULT_SANDBOX_USER, backend="test")
    grant_workspace(path, identity, writable=True)


def make_dir(prefix: str) -> Path:
    """A fresh directory under the world-searchable test root."""
    WORKSPACE_ROOT.mkdir(mode=0o755, exist_ok=True)
    os.chmod(WORKSPACE_ROOT, 0o755)
    path = WORKSPACE_ROOT / f"{prefix}-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o755)
    os.chmod(path, 0o755)
    return path


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A workspace the sandbox user may read and write, holding hello.txt."""
    ensure_sandbox_user()
    path = make_dir("ws")
    (path / "hello.txt").write_text("hello from the workspace\n")
    grant(path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def outside_dir() -> Iterator[Path]:
    """A directory beside the workspace with a world-readable secret (a leak would show)."""
    path = make_dir("outside")
    secret = path / "secret.txt"
    secret.write_text("TOP-SECRET-OUTSIDE\n")
    os.chmod(secret, 0o644)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def namespace_backend() -> NamespaceSandbox:
    """A working bubblewrap backend, or a failed prerequisite."""
    backend = NamespaceSandbox()
    require(backend.bwrap_path is not None, "bubblewrap (bwrap) is not installed")
    ok, reason = probe_namespace(backend)
    require(ok, f"namespaces cannot be created here: {reason}")
    return backend


@pytest.fixture
def subprocess_backend() -> Iterator[SubprocessSandbox]:
    """The real subprocess backend."""
    ensure_sandbox_user()
    backend = SubprocessSandbox()
    yield backend
    backend.close()


@pytest.fixture
def ns_backend() -> Iterator[NamespaceSandbox]:
    """The real namespace backend."""
    ensure_sandbox_user()
    backend = namespace_backend()
    yield backend
    backend.close()


def make_context(
    workspace: Path,
    sandbox: SandboxBackend,
    *,
    settings: Mapping[str, Any] | None = None,
    **sub_constraints: Any,
) -> ToolContext:
    """A ToolContext for a test agent."""
    return ToolContext(
        agent_id="agent-test",
        agent_name="tester",
        workspace=workspace,
        sandbox=sandbox,
        owner=Owner("agent-test"),
        settings=MappingProxyType(dict(settings or {})),
        sub_constraints=MappingProxyType(dict(sub_constraints)),
    )


class CountingSandbox:
    """A real backend that also records each spec it is asked to run."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.isolates_network = inner.isolates_network
        self.specs: list[SandboxSpec] = []

    def run(self, spec: SandboxSpec) -> SandboxResult:
        self.specs.append(spec)
        result: SandboxResult = self.inner.run(spec)
        return result

    def probe(self) -> ProbeReport:
        report: ProbeReport = self.inner.probe()
        return report

    def close(self) -> None:
        self.inner.close()
