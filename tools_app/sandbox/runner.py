"""Run one confined child process: limits, capture, and a kill that leaves nothing.

Shared by the subprocess and namespace backends. The spawn server starts the
child in a new session (its own process group), in its own cgroup where the
machine has one, with rlimits, as the sandbox user; this module supervises it
through a pidfd. Whatever way it ends, every process it started is killed
before this returns.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tools_app.sandbox.capture import CaptureOutcome, CaptureStop, capture_output
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.linux.cgroup_pool import acquire_cgroup, release_cgroup
from tools_app.sandbox.linux.cgroups import CallCgroup, CgroupSupport
from tools_app.sandbox.linux.identity import SandboxIdentity
from tools_app.sandbox.linux.limits import count_user_processes, rlimits_for
from tools_app.sandbox.protocol import KilledBy, Limits
from tools_app.sandbox.readiness import wait_readable
from tools_app.sandbox.spawn.client import ExecFailure, Spawned, SpawnServer, spawn_server

# Messages runtimes print when an allocation is refused by RLIMIT_AS.
MEMORY_FAILURE_MARKERS: tuple[bytes, ...] = (
    b"MemoryError",
    b"Cannot allocate memory",
    b"out of memory",
    b"Out of memory",
    b"std::bad_alloc",
    b"memory exhausted",
)

# Room under RLIMIT_NPROC for other calls of the same user when a pids cgroup holds each
# call to its own ceiling: the rlimit counts every process of the sandbox user, and a
# worker runs hundreds of calls at once (a call that sleeps holds three or four).
SHARED_NPROC_HEADROOM = 4096
# The descriptor number an ``info_pipe`` write end gets in the command.
INFO_FD = 3


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """How one confined child ended."""

    exit_code: int | None
    capture: CaptureOutcome
    killed_by: KilledBy | None
    duration_ms: int
    oom_killed: bool
    cgroup: bool
    # True when the spawn server ran ``python3 -I -S -c`` in its own interpreter.
    warm: bool = False


def _wait_exit(pidfd: int, seconds: float) -> bool:
    """Wait until the process behind ``pidfd`` exits (not reaped); True if it did."""
    return wait_readable(pidfd, seconds)


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
    warm_python: bool = False,
    private_root: Mapping[str, object] | None = None,
    loopback: Mapping[str, object] | None = None,
) -> ProcessOutcome:
    """Start ``argv`` confined, capture its output, and end every process it made.

    ``info_pipe`` (read end, write end): the write end becomes the command's
    descriptor ``INFO_FD``, bubblewrap's ``--info-fd``; the pid it reports is
    the namespace's init, whose exit the kernel delays until every process
    of the namespace is gone, so waiting for it proves nothing is left even
    without a cgroup. ``warm_python`` lets the spawn server run
    ``python3 -I -S -c`` commands in its already started interpreter.
    ``private_root``: the plan of ``spawn_confine.enter_private_root``; the
    command then runs in its own mount, network, IPC and pid namespaces.
    ``loopback``: the plan of ``spawn_loopback``; the command starts in a network
    namespace of its own with the egress relay on its loopback.
    """
    started = time.monotonic()
    deadline = started + timeout_seconds
    group = _call_cgroup(cgroup_support, limits)
    pipes: list[int] = []
    server: SpawnServer | None = None
    try:
        server = spawn_server(env)
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        pipes += [out_read, out_write, err_read, err_write]
        child_fds = [out_write, err_write]
        in_write: int | None = None
        if stdin:
            in_read, in_write = os.pipe()
            pipes += [in_read, in_write]
            child_fds.insert(0, in_read)
        if info_pipe is not None:
            child_fds.append(info_pipe[1])
        try:
            spawned = _spawn(
                server, argv, env=env, cwd=cwd, fds=child_fds, stdin=bool(stdin),
                limits=limits, identity=identity, group=group, warm_python=warm_python,
                private_root=private_root, loopback=loopback, headroom=nproc_headroom,
            )  # fmt: skip
        finally:
            # The server holds its own copies now (or the spawn failed).
            for fd in child_fds:
                os.close(fd)
                if fd in pipes:
                    pipes.remove(fd)
            if info_pipe is not None:
                pipes.append(info_pipe[0])
        if isinstance(spawned, ExecFailure):
            code = 127 if spawned.errno == errno.ENOENT else 126
            message = f"sandbox: cannot run {argv[0]!r}: {spawned.message}\n".encode()
            empty = CaptureOutcome(b"", message, False, False, None)
            elapsed = int((time.monotonic() - started) * 1000)
            return ProcessOutcome(code, empty, None, elapsed, False, group is not None)
        init_pidfd = _namespace_init(info_pipe[0], deadline) if info_pipe is not None else None
        if in_write is not None:
            # capture_output closes it once stdin is fed: closing it here again would
            # close whatever another thread has opened under the same number since.
            pipes.remove(in_write)
        return _supervise(
            server,
            spawned,
            out_read=out_read,
            err_read=err_read,
            in_write=in_write,
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
        for fd in pipes:
            with contextlib.suppress(OSError):
                os.close(fd)
        if group is not None and release_cgroup(group) and server is not None:
            # Pooled for the next call: a child waits in it already when that comes.
            server.prepare(group.procs_files)


def _call_cgroup(support: CgroupSupport, limits: Limits) -> CallCgroup | None:
    """The command's own cgroup, with its memory and process ceilings, where there is one."""
    if not support.available:
        return None
    return acquire_cgroup(
        support, memory_bytes=limits.memory_bytes, max_processes=limits.max_processes
    )


def _spawn(
    server: SpawnServer,
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    fds: list[int],
    stdin: bool,
    limits: Limits,
    identity: SandboxIdentity,
    group: CallCgroup | None,
    warm_python: bool,
    private_root: Mapping[str, object] | None,
    loopback: Mapping[str, object] | None = None,
    headroom: int = 0,
) -> Spawned | ExecFailure:
    """Have the spawn server start ``argv`` confined: rlimits, user, cgroup, root."""
    nproc = _nproc(limits, identity, pids_cgroup=group is not None, headroom=headroom)
    return server.spawn(
        argv,
        env=env,
        cwd=str(cwd),
        fds=fds,
        stdin=stdin,
        rlimits=rlimits_for(limits, cgroup_enforces_memory=group is not None, nproc=nproc),
        uid=identity.uid,
        gid=identity.gid,
        switch=identity.switch,
        cgroup_procs=group.procs_files if group is not None else (),
        warm=warm_python and server.serves_warm(argv, env),
        private_root=private_root,
        loopback=loopback,
    )


def _nproc(limits: Limits, identity: SandboxIdentity, *, pids_cgroup: bool, headroom: int) -> int:
    """RLIMIT_NPROC for one command.

    It counts every process of the user, across concurrent calls and (with user
    namespaces) namespaces still being torn down. With a pids cgroup the exact
    per-call ceiling is pids.max and the rlimit is only a backstop; without one it
    is the ceiling itself.
    """
    nproc = limits.max_processes + headroom
    if pids_cgroup:
        nproc += SHARED_NPROC_HEADROOM
    if not identity.switch:
        # Without a dedicated user the count includes the worker's own
        # processes; allow those plus the call's share.
        nproc += count_user_processes(identity.uid)
    return nproc


@dataclass(slots=True)
class StartedProcess:
    """A confined command left running, with its three pipes (see ``start_confined``)."""

    server: SpawnServer
    pid: int
    pidfd: int
    stdin_fd: int
    stdout_fd: int
    stderr_fd: int
    group: CallCgroup | None
    warm: bool

    def end(
        self, *, kill_grace_seconds: float = 0.0, exit_wait_seconds: float = 0.0
    ) -> tuple[int | None, float, bool]:
        """End it and everything it started; (exit code, CPU seconds, OOM-killed).

        ``exit_wait_seconds``: how long it may take to exit by itself first (its
        namespace's init reports the command's own status once the command ended).
        Its pipes close, its cgroup goes back to the pool; safe to call once only.
        """
        for fd in (self.stdin_fd, self.stdout_fd, self.stderr_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        exited = exit_wait_seconds > 0 and _wait_exit(self.pidfd, exit_wait_seconds)
        if not exited and kill_grace_seconds > 0 and not _wait_exit(self.pidfd, 0):
            _kill_group(self.pid, signal.SIGTERM)
            _wait_exit(self.pidfd, kill_grace_seconds)
        # The leader is a zombie until reaped, so its pid still names the group.
        _kill_group(self.pid, signal.SIGKILL)
        if self.group is not None:
            self.group.kill_all()
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        _wait_exit(self.pidfd, 60.0)
        returncode: int | None = None
        cpu_used = 0.0
        with contextlib.suppress(SandboxError):
            status, cpu_used = self.server.reap(self.pid)
            returncode = os.waitstatus_to_exitcode(status)
        os.close(self.pidfd)
        oom = self.group.oom_killed() if self.group is not None else False
        if self.group is not None and release_cgroup(self.group):
            self.server.prepare(self.group.procs_files)
        return returncode, cpu_used, oom


def start_confined(
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    limits: Limits,
    identity: SandboxIdentity,
    cgroup_support: CgroupSupport,
    warm_python: bool = False,
    private_root: Mapping[str, object] | None = None,
) -> StartedProcess | ExecFailure:
    """Start ``argv`` confined exactly as ``run_confined`` does, and leave it running.

    The caller talks to it through its pipes and must ``end`` it. Its limits hold
    for its whole life (CPU time adds up across what it does).
    """
    group = _call_cgroup(cgroup_support, limits)
    mine: list[int] = []
    theirs: list[int] = []
    try:
        server = spawn_server(env)
        for _ in range(3):
            read_end, write_end = os.pipe()
            mine.append(read_end)
            theirs.append(write_end)
        # stdin: the child reads, this side writes.
        mine[0], theirs[0] = theirs[0], mine[0]
        try:
            spawned = _spawn(
                server, argv, env=env, cwd=cwd, fds=theirs, stdin=True, limits=limits,
                identity=identity, group=group, warm_python=warm_python,
                private_root=private_root,
            )  # fmt: skip
        finally:
            for fd in theirs:
                os.close(fd)
            theirs.clear()
        if isinstance(spawned, ExecFailure):
            raise _NotStarted(spawned)
        pidfd = os.pidfd_open(spawned.pid)
    except BaseException as exc:
        for fd in mine + theirs:
            with contextlib.suppress(OSError):
                os.close(fd)
        if group is not None:
            release_cgroup(group)
        if isinstance(exc, _NotStarted):
            return exc.failure
        raise
    return StartedProcess(
        server, spawned.pid, pidfd, mine[0], mine[1], mine[2], group, spawned.warm
    )


class _NotStarted(Exception):
    def __init__(self, failure: ExecFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def _namespace_init(read_fd: int, deadline: float) -> int | None:
    """A pidfd for the namespace init bubblewrap reports on its info fd, if any."""
    data = b""
    while time.monotonic() < deadline:
        if not wait_readable(read_fd, deadline - time.monotonic()):
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
    server: SpawnServer,
    spawned: Spawned,
    *,
    out_read: int,
    err_read: int,
    in_write: int | None,
    init_pidfd: int | None,
    stdin: bytes,
    deadline: float,
    limits: Limits,
    group: CallCgroup | None,
    started: float,
    kill_grace_seconds: float,
    exit_drain_seconds: float,
) -> ProcessOutcome:
    # The command started a new session: its pid is its process group id.
    pid = pgid = spawned.pid
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        if in_write is not None:
            os.close(in_write)  # owned here until capture_output takes it
        raise
    reaped = False
    try:
        capture = capture_output(
            pidfd=pidfd,
            stdout_fd=out_read,
            stderr_fd=err_read,
            stdin_fd=in_write,
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
        status, cpu_used = server.reap(pid)
        reaped = True
        returncode = os.waitstatus_to_exitcode(status)
    finally:
        if not reaped:
            # Something failed on the way: never leave the command running.
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            _kill_group(pgid, signal.SIGKILL)
            _wait_exit(pidfd, 10.0)
            with contextlib.suppress(SandboxError):
                server.reap(pid)
        os.close(pidfd)
        if init_pidfd is not None:
            os.close(init_pidfd)
    oom = group.oom_killed() if group is not None else False
    killed_by = _classify(
        stop=capture.stop,
        returncode=returncode,
        oom_killed=oom,
        stderr=capture.stderr,
        cpu_used=cpu_used,
        limits=limits,
    )
    elapsed = int((time.monotonic() - started) * 1000)
    return ProcessOutcome(
        returncode, capture, killed_by, elapsed, oom, group is not None, warm=spawned.warm
    )
