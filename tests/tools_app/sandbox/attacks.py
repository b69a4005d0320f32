"""Attacks every backend must withstand; each backend's test module subclasses the suite.

Commands use paths relative to the workspace so one suite fits a backend that
sees the workspace at its host path and one that mounts it at /workspace.
"""

from __future__ import annotations

import os
import pwd
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.vocabulary.sandbox import DEFAULT_SANDBOX_USER
from tests.tools_app.sandbox.proc import (
    open_fd_count,
    processes_with_environ,
    processes_with_marker,
    reset_rss_high_water,
    rss_high_water_kib,
)
from tools_app.sandbox.errors import SandboxWorkspaceEscapeError
from tools_app.sandbox.linux.limits import count_user_processes
from tools_app.sandbox.paths import SAFE_PATH_PREFIXES, is_within
from tools_app.sandbox.protocol import (
    MIB,
    KilledBy,
    Limits,
    MountMode,
    Owner,
    SandboxBackend,
    SandboxResult,
    SandboxSpec,
    WorkspaceMount,
)

RUN_MARKER_NAME = "SYNTHORG_TEST_RUN"
RUN_MARKER = uuid.uuid4().hex
FORK_BOMB = (
    "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
)
# How a start refused by RLIMIT_NPROC reads (fork or exec failing with EAGAIN).
PROCESS_LIMIT_REFUSAL = "Resource temporarily unavailable"
PROCESS_LIMIT_RETRIES = 20
MEMORY_BOMB = "hog = []\nwhile True:\n    hog.append(bytearray(8 * 1024 * 1024))\n"


class AttackSuite:
    """Behaviour a person would notice, tried against a real backend."""

    # How far above ``max_processes`` the user's process count may rise: the
    # sandbox machinery itself shares the uid for a few processes.
    process_ceiling_slack = 4
    # Who calls run for; container backends key reuse on it.
    owner: Owner | None = None

    def make_backend(self) -> SandboxBackend:
        raise NotImplementedError

    @pytest.fixture
    def backend(self) -> Iterator[SandboxBackend]:
        backend = self.make_backend()
        yield backend
        backend.close()

    def run(
        self,
        backend: SandboxBackend,
        workspace: Path,
        *argv: str,
        mode: MountMode = MountMode.READ_WRITE,
        **kwargs: object,
    ) -> SandboxResult:
        kwargs.setdefault("owner", self.owner)
        # Tag every process of this suite so checks ignore other users of the
        # sandbox account (another test run on the same machine).
        kwargs["env"] = {**dict(kwargs.get("env") or {}), RUN_MARKER_NAME: RUN_MARKER}  # type: ignore[call-overload]
        spec = SandboxSpec(argv=argv, workspace=WorkspaceMount(workspace, mode), **kwargs)  # type: ignore[arg-type]
        return backend.run(spec)

    def leftover_processes(self) -> list[int]:
        """Live processes started by this suite's sandboxed calls."""
        return processes_with_environ(f"{RUN_MARKER_NAME}={RUN_MARKER}")

    # -- plain behaviour -------------------------------------------------

    def test_exit_code_and_both_streams_are_reported(self, backend, workspace):
        result = self.run(backend, workspace, "sh", "-c", "echo out; echo err >&2; exit 3")
        assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
        assert result.killed_by is None and not result.timed_out and not result.truncated
        assert result.backend == backend.name

    def test_stdin_reaches_the_command(self, backend, workspace):
        result = self.run(backend, workspace, "cat", stdin=b"fed through stdin")
        assert result.stdout == "fed through stdin"

    def test_reads_the_workspace_from_its_working_directory(self, backend, workspace):
        (workspace / "sub").mkdir()
        (workspace / "sub" / "note.txt").write_text("nested\n")
        os.chmod(workspace / "sub", 0o2775)
        result = self.run(backend, workspace, "cat", "note.txt", cwd="sub")
        assert result.stdout == "nested\n"

    def test_missing_program_is_a_failed_call_not_a_crash(self, backend, workspace):
        result = self.run(backend, workspace, "no-such-program-anywhere")
        assert result.exit_code not in (0, None)

    # -- secrets ---------------------------------------------------------

    def test_worker_secrets_are_invisible_inside(self, backend, workspace, monkeypatch):
        secrets = {
            "AWS_SECRET_ACCESS_KEY": "s3cr3t-aws-value",
            "GITHUB_TOKEN": "ghp_tokenvalue123",
            "DATABASE_PASSWORD": "pw-value-456",
            "OPENAI_API_KEY": "sk-apikey-789",
            "LD_PRELOAD": "/tmp/evil-preload.so",
            "PYTHONPATH": "/tmp/evil-pythonpath",
            "BASH_ENV": "/tmp/evil-bash-env",
        }
        for name, value in secrets.items():
            monkeypatch.setenv(name, value)
        result = self.run(
            backend,
            workspace,
            "sh",
            "-c",
            f"env; cat /proc/{os.getpid()}/environ 2>/dev/null | tr '\\0' '\\n'",
            env={"MY_PRIVATE_KEY": "added-secret-000", "NODE_OPTIONS": "--require=evil"},
        )
        assert result.exit_code is not None
        for value in [*secrets.values(), "added-secret-000", "--require=evil"]:
            assert value not in result.stdout
        names = {line.split("=", 1)[0] for line in result.stdout.splitlines() if "=" in line}
        assert not names & {*secrets, "MY_PRIVATE_KEY", "NODE_OPTIONS"}

    def test_tool_environment_additions_pass_when_safe(self, backend, workspace):
        result = self.run(backend, workspace, "sh", "-c", "echo $GREETING", env={"GREETING": "hi"})
        assert result.stdout == "hi\n"

    # -- PATH, cwd and symlinks -------------------------------------------

    def test_path_spoofing_cannot_run_workspace_or_lookalike_binaries(self, backend, workspace):
        fake_bin = workspace / "bin"
        fake_bin.mkdir()
        trap = fake_bin / "ls"
        trap.write_text("#!/bin/sh\necho PWNED\n")
        os.chmod(trap, 0o755)
        evil = Path("/usr/bin-evil-" + uuid.uuid4().hex[:6])
        evil.mkdir()
        try:
            shutil.copy(trap, evil / "ls")
            spoofed = f"bin:./bin:.::{fake_bin}:/workspace/bin:{evil}:/usr/bin"
            result = self.run(backend, workspace, "ls", env={"PATH": spoofed})
            assert "PWNED" not in result.stdout
            assert "hello.txt" in result.stdout
            shown = self.run(backend, workspace, "sh", "-c", 'echo "$PATH"', env={"PATH": spoofed})
            for entry in shown.stdout.strip().split(":"):
                assert any(is_within(entry, p) for p in SAFE_PATH_PREFIXES), entry
        finally:
            shutil.rmtree(evil)

    @pytest.mark.parametrize("cwd", ["..", "../..", "/etc", "/", "sub/../../"])
    def test_working_directory_outside_the_workspace_is_refused(self, backend, workspace, cwd):
        (workspace / "sub").mkdir()
        with pytest.raises(SandboxWorkspaceEscapeError, match="outside the workspace"):
            self.run(backend, workspace, "pwd", cwd=cwd)

    def test_symlinked_working_directory_escape_is_refused(self, backend, workspace, outside_dir):
        (workspace / "link").symlink_to(outside_dir)
        with pytest.raises(SandboxWorkspaceEscapeError):
            self.run(backend, workspace, "cat", "secret.txt", cwd="link")

    def test_symlink_to_a_file_outside_cannot_leak_it(self, backend, workspace, outside_dir):
        (workspace / "leak").symlink_to(outside_dir / "secret.txt")
        result = self.run(backend, workspace, "cat", "leak")
        assert "top secret" not in result.stdout
        assert result.exit_code != 0

    # -- writes ------------------------------------------------------------

    def test_writes_outside_the_workspace_fail(self, backend, workspace, outside_dir):
        target = outside_dir / "pwned.txt"
        script = f"echo x > {target}; echo x > /etc/pwned-{uuid.uuid4().hex[:6]}; echo done"
        result = self.run(backend, workspace, "sh", "-c", script)
        assert result.stdout == "done\n"
        assert not target.exists()
        assert (
            "Permission denied" in result.stderr
            or "Read-only" in result.stderr
            or ("No such file" in result.stderr)
        )
        assert not list(Path("/etc").glob("pwned-*"))

    def test_read_only_workspace_is_read_only(self, backend, ro_workspace):
        script = "echo changed > hello.txt; echo new > new.txt; rm -f hello.txt; cat hello.txt"
        result = self.run(backend, ro_workspace, "sh", "-c", script, mode=MountMode.READ_ONLY)
        assert result.stdout == "hello from the workspace\n"
        assert (ro_workspace / "hello.txt").read_text() == "hello from the workspace\n"
        assert not (ro_workspace / "new.txt").exists()

    def test_read_write_workspace_keeps_what_the_command_wrote(self, backend, workspace):
        result = self.run(backend, workspace, "sh", "-c", "echo made > made.txt")
        assert result.exit_code == 0
        assert (workspace / "made.txt").read_text() == "made\n"

    # -- resources -------------------------------------------------------

    def test_fork_bomb_is_contained_and_the_machine_stays_responsive(self, backend, workspace):
        limits = Limits(max_processes=32, cpu_seconds=20)
        peak = [0]
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], len(self.leftover_processes()))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            result = self.run(
                backend, workspace, "python3", "-c", FORK_BOMB, timeout_seconds=4, limits=limits
            )
        finally:
            done.set()
            watcher.join()
        assert result.timed_out and result.killed_by is KilledBy.TIMEOUT, result
        # A few processes of the sandbox machinery itself may count too.
        assert 0 < peak[0] <= limits.max_processes + self.process_ceiling_slack
        after = self.run(backend, workspace, "echo", "still here")
        assert after.stdout == "still here\n"
        assert describe(self.leftover_processes()) == []

    def test_memory_bomb_is_killed_and_reported(self, backend, workspace):
        limits = Limits(memory_bytes=128 * MIB)
        result = self.run(
            backend, workspace, "python3", "-c", MEMORY_BOMB, timeout_seconds=60, limits=limits
        )
        assert result.killed_by is KilledBy.MEMORY
        assert result.exit_code != 0
        assert not result.timed_out

    def test_output_flood_is_truncated_while_streaming(self, backend, workspace):
        cap = 256 * 1024
        reset_rss_high_water()
        before = rss_high_water_kib()
        result = self.run(
            backend,
            workspace,
            "sh",
            "-c",
            "yes flood-line-of-text & yes err-flood >&2; wait",
            timeout_seconds=60,
            limits=Limits(output_bytes=cap),
        )
        grown = rss_high_water_kib() - before
        assert result.killed_by is KilledBy.OUTPUT_LIMIT
        assert result.truncated
        assert len(result.stdout.encode()) <= cap and len(result.stderr.encode()) <= cap
        # Two capped streams plus read buffers; a buffered flood would be far larger.
        assert grown < 16 * 1024, f"worker RSS grew by {grown} KiB"
        assert describe(self.leftover_processes()) == []

    def test_endless_loop_times_out_and_leaves_no_process(self, backend, workspace):
        marker = f"endless-{uuid.uuid4().hex}"
        script = (
            f"setsid sh -c 'while :; do :; done' {marker}-escaped & "
            f"exec sh -c 'while :; do :; done' {marker}"
        )
        result = self.run(backend, workspace, "sh", "-c", script, timeout_seconds=1)
        assert result.timed_out and result.killed_by is KilledBy.TIMEOUT
        assert processes_with_marker(marker) == []
        assert describe(self.leftover_processes()) == []

    def test_cpu_time_limit_ends_a_busy_command(self, backend, workspace):
        limits = Limits(cpu_seconds=1)
        result = self.run(
            backend,
            workspace,
            "python3",
            "-c",
            "while True: pass",
            timeout_seconds=60,
            limits=limits,
        )
        assert result.killed_by is KilledBy.CPU_TIME
        assert not result.timed_out

    def test_file_size_limit_stops_a_huge_write(self, backend, workspace):
        limits = Limits(file_size_bytes=1 * MIB)
        result = self.run(
            backend,
            workspace,
            "sh",
            "-c",
            "head -c 5000000 /dev/zero > big.bin",
            limits=limits,
        )
        assert result.exit_code != 0
        assert (workspace / "big.bin").stat().st_size <= 1 * MIB

    def test_no_core_dumps_and_few_open_files(self, backend, workspace):
        result = self.run(
            backend, workspace, "sh", "-c", "ulimit -c; ulimit -n", limits=Limits(open_files=100)
        )
        assert result.stdout.split() == ["0", "100"]

    # -- leaks -------------------------------------------------------------

    def test_a_hundred_calls_leak_no_process_or_descriptor(self, backend, workspace):
        # Warm per-owner containers and any client connection pool first:
        # a pool that fills up to its size is not a leak, growth after is.
        for _ in range(20):
            self.run(backend, workspace, "sh", "-c", "sleep 30 & echo $$")
        fds = open_fd_count()
        # A leak of one process or descriptor per call would show as a hundred here.
        for index in range(100):
            argv = ("true",) if index % 2 else ("sh", "-c", "sleep 30 & echo $$")
            result = self.run_with_room(backend, workspace, *argv)
            assert result.exit_code == 0, (index, result)
        assert open_fd_count() <= fds
        assert describe(self.leftover_processes()) == []
        self.assert_no_leaked_resources()

    def assert_no_leaked_resources(self) -> None:
        """Backends with extra resources (containers, scratch dirs) check them here."""

    def run_with_room(self, backend: SandboxBackend, workspace: Path, *argv: str) -> SandboxResult:
        """Run once there is room under the sandbox user's process limit.

        The limit counts every process of the sandbox user on the machine,
        other test runs included; a start refused for that reason (EAGAIN) is
        not a leak of this run, so it is retried, a bounded number of times.
        """
        for _ in range(PROCESS_LIMIT_RETRIES):
            wait_for_sandbox_user_room()
            result = self.run(backend, workspace, *argv)
            if not (result.exit_code != 0 and PROCESS_LIMIT_REFUSAL in result.stderr):
                return result
            time.sleep(0.2)
        return result


def wait_for_sandbox_user_room(*, below: int = 32, seconds: float = 10.0) -> None:
    """Let processes of earlier calls finish exiting before the next call.

    The process limit counts every process of the sandbox user, so on a busy
    machine the teardown of the previous call can still hold slots; waiting
    (bounded) keeps this test about leaks, not about how fast the kernel reaps.
    """
    if os.geteuid() != 0:
        return
    try:
        uid = pwd.getpwnam(DEFAULT_SANDBOX_USER).pw_uid
    except KeyError:
        return
    deadline = time.monotonic() + seconds
    while count_user_processes(uid) >= below and time.monotonic() < deadline:
        time.sleep(0.01)


def describe(pids: list[int]) -> list[str]:
    """``pid: command line`` for each pid, for readable assertion failures."""
    described = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        described.append(f"{pid}: {cmdline[:120]}")
    return described
