"""Run one confined child process: limits, capture, and a kill that leaves nothing.

Shared by the subprocess and namespace backends. The child starts in a new
session (its own process group), in its own cgroup where the machine has one,
with rlimits, as the sandbox user. Whatever way it ends, every process it
started is killed before this returns.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tools_app.sandbox.capture import CaptureOutcome, CaptureStop, capture_output
from tools_app.sandbox.cgroups import CallCgroup, CgroupSupport
from tools_app.sandbox.identity import SandboxIdentity
from tools_app.sandbox.limits import count_user_processes, make_preexec, rlimits_for
from tools_app.sandbox.protocol import KilledBy, Limits

# Messages runtimes print when an allocation is refused by RLIMIT_AS.
MEMORY_FAILURE_MARKERS: tuple[bytes, ...] = (
    b"MemoryError",
    b"Cannot allocate memory",
    b"out of memory",
    b"Out of memory",
    b"std::bad_alloc",
    b"memory exhausted",
)

# Room under RLIMIT_NPROC for other calls of the same user when a pids cgroup
# holds each call to its own ceiling.
SHARED_NPROC_HEADROOM = 256


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """How one confined child ended."""

    exit_code: int | None
    capture: CaptureOutcome
    killed_by: KilledBy | None
    duration_ms: int
    oom_killed: bool
    cgroup: bool


def _wait_exit(pidfd: int, seconds: float) -> bool:
    """Wait until the process behind ``pidfd`` exits (not reaped); True if it did."""
    ready, _, _ = select.select([pidfd], [], [], max(seconds, 0.0))
    return bool(ready)


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _classify(
    *,
    stop: CaptureStop | None,
    returncode: int,
    oom_killed: bool,
    stderr: bytes,
    cpu_used: float,
    limits: Limits,
) -> KilledBy | None:
    if stop is CaptureStop.TIMEOUT:
        return KilledBy.TIMEOUT
    if stop is CaptureStop.OUTPUT_LIMIT:
        return KilledBy.OUTPUT_LIMIT
    if oom_killed:
        return KilledBy.MEMORY
    signalled = -returncode if returncode < 0 else None
    if returncode in (128 + signal.SIGXCPU,) or signalled == signal.SIGXCPU:
        return KilledBy.CPU_TIME
    if signalled == signal.SIGKILL and cpu_used >= limits.cpu_seconds:
        return KilledBy.CPU_TIME
    if returncode != 0 and any(marker in stderr[-4096:] for marker in MEMORY_FAILURE_MARKERS):
        return KilledBy.MEMORY
    return None


def run_confined(
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    stdin: bytes,
    timeout_seconds: float,
    limits: Limits,
    identity: SandboxIdentity,
    cgroup_support: CgroupSupport,
    kill_grace_seconds: float,
    exit_drain_seconds: float,
    nproc_headroom: int = 0,
    info_pipe: tuple[int, int] | None = None,
) -> ProcessOutcome:
    """Start ``argv`` confined, capture its output, and end every process it made.

    ``info_pipe`` (read end, write end) is handed to bubblewrap as its
    ``--info-fd``; the pid it reports is the namespace's init, whose exit the
    kernel delays until every process of the namespace is gone, so waiting
    for it proves nothing is left even without a cgroup.
    """
    started = time.monotonic()
    deadline = started + timeout_seconds
    group = (
        CallCgroup(
            cgroup_support, memory_bytes=limits.memory_bytes, max_processes=limits.max_processes
        )
        if cgroup_support.available
        else None
    )
    try:
        # RLIMIT_NPROC counts every process of the user, across concurrent
        # calls and (with user namespaces) namespaces still being torn down.
        # With a pids cgroup the exact per-call ceiling is pids.max and the
        # rlimit is only a backstop; without one it is the ceiling itself.
        nproc = limits.max_processes + nproc_headroom
        if group is not None:
            nproc += SHARED_NPROC_HEADROOM
        if not identity.switch:
            # Without a dedicated user the count includes the worker's own
            # processes; allow those plus the call's share.
            nproc += count_user_processes(identity.uid)
        preexec = make_preexec(
            rlimits_for(limits, cgroup_enforces_memory=group is not None, nproc=nproc),
            identity,
            group.procs_files if group is not None else (),
        )
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,
                # Celery prefork workers call this from a single thread, where
                # preexec_fn is safe.
                preexec_fn=preexec,
                close_fds=True,
                pass_fds=(info_pipe[1],) if info_pipe is not None else (),
            )
        except OSError as exc:
            code = 127 if isinstance(exc, FileNotFoundError) else 126
            message = f"sandbox: cannot run {argv[0]!r}: {exc.strerror or exc}\n".encode()
            empty = CaptureOutcome(b"", message, False, False, None)
            elapsed = int((time.monotonic() - started) * 1000)
            return ProcessOutcome(code, empty, None, elapsed, False, group is not None)
        finally:
            if info_pipe is not None:
                os.close(info_pipe[1])
        init_pidfd = _namespace_init(info_pipe[0], deadline) if info_pipe is not None else None
        return _supervise(
            proc,
            init_pidfd=init_pidfd,
            stdin=stdin,
            deadline=deadline,
            limits=limits,
            group=group,
            started=started,
            kill_grace_seconds=kill_grace_seconds,
            exit_drain_seconds=exit_drain_seconds,
        )
    finally:
        if info_pipe is not None:
            with contextlib.suppress(OSError):
                os.close(info_pipe[0])
        if group is not None:
            group.kill_all()
            group.remove()


def _namespace_init(read_fd: int, deadline: float) -> int | None:
    """A pidfd for the namespace init bubblewrap reports on its info fd, if any."""
    data = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([read_fd], [], [], deadline - time.monotonic())
        if not ready:
            break
        chunk = os.read(read_fd, 4096)
        if not chunk:
            break
        data += chunk
    try:
        pid = int(json.loads(data)["child-pid"])
        return os.pidfd_open(pid)
    except (ValueError, KeyError, TypeError, OSError):
        return None


def _supervise(
    proc: subprocess.Popen[bytes],
    *,
    init_pidfd: int | None,
    stdin: bytes,
    deadline: float,
    limits: Limits,
    group: CallCgroup | None,
    started: float,
    kill_grace_seconds: float,
    exit_drain_seconds: float,
) -> ProcessOutcome:
    pgid = proc.pid
    pidfd = os.pidfd_open(proc.pid)
    try:
        capture = capture_output(
            proc,
            stdin=stdin,
            cap=limits.output_bytes,
            deadline=deadline,
            exit_drain_seconds=exit_drain_seconds,
        )
        stop = capture.stop
        if stop is None and not _wait_exit(pidfd, deadline - time.monotonic()):
            # Pipes closed but the process keeps running: it ran out of time.
            stop = CaptureStop.TIMEOUT
            capture = CaptureOutcome(
                capture.stdout,
                capture.stderr,
                capture.stdout_truncated,
                capture.stderr_truncated,
                stop,
            )
        if stop is CaptureStop.TIMEOUT:
            _kill_group(pgid, signal.SIGTERM)
            if not _wait_exit(pidfd, kill_grace_seconds):
                _kill_group(pgid, signal.SIGKILL)
        elif stop is not None:
            _kill_group(pgid, signal.SIGKILL)
        _wait_exit(pidfd, 3600.0)
        # The leader is a zombie until reaped, so its pid still names the
        # group: kill stragglers before reaping, never a recycled pid.
        _kill_group(pgid, signal.SIGKILL)
        if group is not None:
            group.kill_all()
        if init_pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(init_pidfd, signal.SIGKILL)
            _wait_exit(init_pidfd, 3600.0)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        os.close(pidfd)
        if init_pidfd is not None:
            os.close(init_pidfd)
        for pipe in (proc.stdout, proc.stderr, proc.stdin):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
    oom = group.oom_killed() if group is not None else False
    killed_by = _classify(
        stop=capture.stop,
        returncode=proc.returncode,
        oom_killed=oom,
        stderr=capture.stderr,
        cpu_used=usage.ru_utime + usage.ru_stime,
        limits=limits,
    )
    elapsed = int((time.monotonic() - started) * 1000)
    return ProcessOutcome(proc.returncode, capture, killed_by, elapsed, oom, group is not None)
