"""SubprocessSandbox against real processes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from common.testing import require
from tests.tools_app.sandbox.attacks import AttackSuite
from tools_app.sandbox.errors import SandboxUserMissingError, SandboxWorkspaceAccessError
from tools_app.sandbox.protocol import SandboxSpec, WorkspaceMount
from tools_app.sandbox.subprocess import DEFAULT_SCRATCH_ROOT, SubprocessSandbox


class TestSubprocessSandbox(AttackSuite):
    def make_backend(self) -> SubprocessSandbox:
        return SubprocessSandbox()

    @pytest.fixture(autouse=True)
    def _scratch_before(self) -> None:
        DEFAULT_SCRATCH_ROOT.mkdir(mode=0o711, exist_ok=True)
        self.scratch_before = set(DEFAULT_SCRATCH_ROOT.iterdir())

    def assert_no_leaked_resources(self) -> None:
        assert set(DEFAULT_SCRATCH_ROOT.iterdir()) <= self.scratch_before

    def test_runs_as_the_unprivileged_sandbox_user(self, backend, workspace):
        result = self.run(backend, workspace, "id", "-u")
        expected = "10001" if os.geteuid() == 0 else str(os.getuid())
        if os.geteuid() == 0:
            import pwd

            expected = str(pwd.getpwnam("synthorg-sandbox").pw_uid)
        assert result.stdout.strip() == expected
        assert result.stdout.strip() != "0"

    def test_scratch_home_is_private_and_removed(self, backend, workspace):
        result = self.run(backend, workspace, "sh", "-c", 'echo x > "$HOME/f"; echo "$HOME"')
        home = Path(result.stdout.strip())
        assert home.parent == DEFAULT_SCRATCH_ROOT
        assert not home.exists()


def test_root_worker_without_sandbox_user_refuses_every_call(workspace):
    require(os.geteuid() == 0, "running as root (only a root worker switches user)")
    backend = SubprocessSandbox(run_as_user="synthorg-no-such-user")
    spec = SandboxSpec(argv=("id",), workspace=WorkspaceMount(workspace))
    with pytest.raises(SandboxUserMissingError, match="never run as root"):
        backend.run(spec)
    report = backend.probe()
    assert not report.ok and "synthorg-no-such-user" in report.reason


def test_workspace_the_sandbox_user_cannot_read_is_refused_with_the_fix(workspace):
    require(os.geteuid() == 0, "running as root (only a root worker switches user)")
    os.chmod(workspace, 0o700)
    os.chown(workspace, 0, 0)
    spec = SandboxSpec(argv=("ls",), workspace=WorkspaceMount(workspace))
    with pytest.raises(SandboxWorkspaceAccessError, match="chmod -R g\\+rX"):
        SubprocessSandbox().run(spec)


def test_probe_reports_it_works_here():
    report = SubprocessSandbox().probe()
    assert report.ok, report.reason
    assert "cgroup" in report.details
