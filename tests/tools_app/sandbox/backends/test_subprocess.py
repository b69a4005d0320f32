"""SubprocessSandbox against real processes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from common.testing import require
from tests.tools_app.sandbox.attacks import AttackSuite
from tools_app.sandbox.backends.subprocess import DEFAULT_SCRATCH_ROOT, SubprocessSandbox
from tools_app.sandbox.errors import SandboxUserMissingError, SandboxWorkspaceAccessError
from tools_app.sandbox.protocol import SandboxSpec, WorkspaceMount
from tools_app.sandbox.scratch import POOL_SIZE


class TestSubprocessSandbox(AttackSuite):
    def make_backend(self) -> SubprocessSandbox:
        return SubprocessSandbox()

    @pytest.fixture(autouse=True)
    def _scratch_before(self) -> None:
        DEFAULT_SCRATCH_ROOT.mkdir(mode=0o711, exist_ok=True)
        self.scratch_before = set(DEFAULT_SCRATCH_ROOT.iterdir())

    def assert_no_leaked_resources(self) -> None:
        # Emptied directories wait, a few at most, for the next call.
        new = set(DEFAULT_SCRATCH_ROOT.iterdir()) - self.scratch_before
        assert len(new) <= POOL_SIZE
        assert all(not any(path.iterdir()) for path in new)

    def test_runs_as_the_unprivileged_sandbox_user(self, backend, workspace):
        result = self.run(backend, workspace, "id", "-u")
        expected = "10001" if os.geteuid() == 0 else str(os.getuid())
        if os.geteuid() == 0:
            import pwd

            expected = str(pwd.getpwnam("synthorg-sandbox").pw_uid)
        assert result.stdout.strip() == expected
        assert result.stdout.strip() != "0"

    def test_scratch_home_is_private_and_removed(self, backend, workspace):
        script = 'echo x > "$HOME/f"; mkdir "$TMPDIR/d"; stat -c %a "$HOME"; echo "$HOME"'
        result = self.run(backend, workspace, "sh", "-c", script)
        mode, home_text = result.stdout.split()
        home = Path(home_text)
        assert mode == "700"
        assert home.parent == DEFAULT_SCRATCH_ROOT
        assert not home.exists()

    def test_next_call_gets_an_empty_scratch_home(self, backend, workspace):
        for _ in range(3):
            result = self.run(backend, workspace, "sh", "-c", 'ls -A "$HOME"; touch "$HOME/left"')
            assert result.stdout == ""

    def test_scratch_home_the_call_changed_is_not_handed_on(self, backend, workspace):
        first = self.run(backend, workspace, "sh", "-c", 'chmod 755 "$HOME"; echo "$HOME"')
        second = self.run(backend, workspace, "sh", "-c", 'stat -c %a "$HOME"; echo "$HOME"')
        mode, home = second.stdout.split()
        assert mode == "700"
        assert home != first.stdout.strip()
        assert not Path(first.stdout.strip()).exists()


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
