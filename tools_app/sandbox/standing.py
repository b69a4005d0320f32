"""Standing runners: a confined command kept running to answer later calls.

A command that answers each line of its stdin with one line on stdout
(``SandboxSpec.answers_lines``) need not be started for every call: the
subprocess backend keeps one running per agent, workspace and everything
else that shapes the process (argv, environment, limits, network), and gives
it each later call's stdin as a request. Starting a confined process (a
cgroup, four namespaces, a private root, a scratch directory) costs far more
than most file operations; a standing runner pays it once.

What still holds for every call: the runner is the same confined process a
call would start (same user, rlimits, cgroup, namespaces and root, the
workspace mounted as the call asks: a writing call's runner has it writable and
never answers a reading call, whose runner has it read-only), one call at a time;
a call that runs out of time or passes its output limit ends the runner and
everything it started, exactly as a per-call process would end; a runner
never serves another agent, another workspace (by device and inode: a
workspace removed and made again gets a new runner) or another shape of call.
Runners are retired after ``max_requests`` answers, ``max_age_seconds``,
``idle_seconds`` unused, or half their CPU limit (which adds up over their
life), and at most ``capacity`` stand at once per worker process; past that a
call starts its own process as before.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import select
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from tools_app.sandbox.protocol import KilledBy, SandboxResult
from tools_app.sandbox.runner import StartedProcess

# Standard library logging: the backends load without the console's packages too.
log = logging.getLogger("synthorg.sandbox.standing")

CHUNK_BYTES = 64 * 1024
STDERR_KEEP_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class StandingLimits:
    """How many runners stand and how long each serves."""

    capacity: int = 32
    idle_seconds: float = 30.0
    max_age_seconds: float = 300.0
    max_requests: int = 2000


@dataclass(slots=True)
class StandingRunner:
    """One standing confined process and what it has served."""

    process: StartedProcess
    cpu_seconds_limit: float
    kill_grace_seconds: float
    release: Callable[[], None]
    started: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    served: int = 0
    ended: bool = False

    def ask(self, request: bytes, *, timeout_seconds: float, cap: int, backend: str) -> Answer:
        """Send one request line; read its answer line within the time and size limits."""
        began = time.monotonic()
        deadline = began + timeout_seconds
        stop = _exchange(self.process, request.rstrip(b"\n") + b"\n", deadline, cap)
        self.served += 1
        self.last_used = time.monotonic()
        elapsed = int((self.last_used - began) * 1000)
        if stop.answer is not None:
            result = SandboxResult(
                backend=backend,
                exit_code=0,
                stdout=stop.answer.decode("utf-8", errors="replace"),
                stderr="",
                duration_ms=elapsed,
                log_metadata={"standing": True, "served": self.served},
            )
            return Answer(result, fresh=self.served == 1, died=False)
        # It ran out of time, said too much, or ended: it serves no one again.
        stderr = _drain(self.process.stderr_fd)
        # One that ended by itself is given a moment to report how.
        exit_code, _, oom = self.end(exit_wait_seconds=0.0 if stop.killed_by else 1.0)
        killed_by = stop.killed_by
        if killed_by is None and oom:
            killed_by = KilledBy.MEMORY
        result = SandboxResult(
            backend=backend,
            exit_code=exit_code if killed_by is None else (exit_code if exit_code else -9),
            stdout=stop.partial.decode("utf-8", errors="replace"),
            stderr=stderr.decode("utf-8", errors="replace"),
            duration_ms=elapsed,
            timed_out=killed_by is KilledBy.TIMEOUT,
            killed_by=killed_by,
            stdout_truncated=killed_by is KilledBy.OUTPUT_LIMIT,
            log_metadata={"standing": True, "served": self.served},
        )
        return Answer(result, fresh=self.served == 1, died=killed_by is None)

    def spent(self, limits: StandingLimits, now: float) -> bool:
        """True when it should serve no more calls."""
        if self.ended or self.served >= limits.max_requests:
            return True
        if now - self.started >= limits.max_age_seconds:
            return True
        return _cpu_seconds(self.process.pid) >= self.cpu_seconds_limit / 2

    def end(self, *, exit_wait_seconds: float = 0.0) -> tuple[int | None, float, bool]:
        """End the process and everything it started; release what it held."""
        if self.ended:
            return None, 0.0, False
        self.ended = True
        try:
            return self.process.end(
                kill_grace_seconds=self.kill_grace_seconds, exit_wait_seconds=exit_wait_seconds
            )
        finally:
            self.release()


@dataclass(frozen=True, slots=True)
class Answer:
    """One call's result from a runner; ``died``: it ended before answering."""

    result: SandboxResult
    fresh: bool
    died: bool


@dataclass(frozen=True, slots=True)
class _Exchange:
    answer: bytes | None
    partial: bytes = b""
    killed_by: KilledBy | None = None


def _exchange(process: StartedProcess, request: bytes, deadline: float, cap: int) -> _Exchange:
    """Write ``request`` and read up to the first newline (not kept)."""
    os.set_blocking(process.stdin_fd, False)
    pending = memoryview(request)
    received = bytearray()
    poller = select.poll()
    poller.register(process.stdout_fd, select.POLLIN)
    poller.register(process.pidfd, select.POLLIN)
    poller.register(process.stdin_fd, select.POLLOUT)
    writing = True
    while True:
        now = time.monotonic()
        if now >= deadline:
            return _Exchange(None, bytes(received), KilledBy.TIMEOUT)
        for fd, events in poller.poll(max(1, math.ceil((deadline - now) * 1000))):
            if fd == process.stdin_fd and writing:
                if events & (select.POLLERR | select.POLLHUP):
                    return _Exchange(None, bytes(received))
                try:
                    pending = pending[os.write(fd, pending[:CHUNK_BYTES]) :]
                except BlockingIOError:
                    continue
                except BrokenPipeError:
                    return _Exchange(None, bytes(received))
                if not pending:
                    poller.unregister(fd)
                    writing = False
            elif fd == process.stdout_fd:
                chunk = os.read(fd, CHUNK_BYTES)
                if not chunk:
                    return _Exchange(None, bytes(received))
                end = chunk.find(b"\n")
                if end >= 0:
                    received += chunk[:end]
                    if len(received) > cap:
                        return _Exchange(None, bytes(received[:cap]), KilledBy.OUTPUT_LIMIT)
                    if chunk[end + 1 :]:
                        # More than one answer to one request: not a runner to trust.
                        return _Exchange(None, bytes(received))
                    return _Exchange(bytes(received))
                received += chunk
                if len(received) > cap:
                    return _Exchange(None, bytes(received[:cap]), KilledBy.OUTPUT_LIMIT)
            elif fd == process.pidfd:
                # Ended: what it wrote before is still in the pipe.
                poller.unregister(fd)
                tail = _drain(process.stdout_fd, cap + 1)
                end = tail.find(b"\n")
                received += tail if end < 0 else tail[:end]
                return _Exchange(None, bytes(received[:cap]))


def _drain(fd: int, limit: int = STDERR_KEEP_BYTES) -> bytes:
    """What is in a pipe now, up to ``limit`` bytes, without waiting."""
    data = bytearray()
    with contextlib.suppress(OSError):
        os.set_blocking(fd, False)
        while len(data) < limit:
            try:
                chunk = os.read(fd, min(CHUNK_BYTES, limit - len(data)))
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
    return bytes(data)


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return math.inf
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class StandingPool:
    """The standing runners of one worker process, by what shapes them."""

    def __init__(self, limits: StandingLimits) -> None:
        self.limits = limits
        self._idle: dict[Hashable, list[StandingRunner]] = {}
        self._count = 0
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._sweeper: threading.Thread | None = None

    @property
    def standing(self) -> int:
        """How many runners stand now (idle or serving)."""
        return self._count

    def ask(
        self,
        key: Hashable,
        start: Callable[[], StandingRunner | SandboxResult],
        request: bytes,
        *,
        timeout_seconds: float,
        cap: int,
        backend: str,
    ) -> SandboxResult | None:
        """The answer of a standing runner for ``key`` (started with ``start`` when none
        waits); None when the pool is full and the caller should run the call itself.

        ``start`` returns the result of a command that could not start, as a call would.
        """
        began = time.monotonic()
        for _ in range(2):
            runner = self._take(key)
            if runner is None:
                return None
            if isinstance(runner, _Start):
                started = self._start(start)
                if isinstance(started, SandboxResult):
                    return started
                runner = started
            # A runner this call had to start spent the call's own time starting: the
            # call's limit counts from its beginning, as it does for a process per call.
            left = timeout_seconds - (time.monotonic() - began)
            try:
                answer = runner.ask(request, timeout_seconds=left, cap=cap, backend=backend)
            except BaseException:
                self._retire(runner)
                raise
            self._give_back(key, runner)
            if answer.died and not answer.fresh:
                # A runner that served before ended without a word (retired by the
                # kernel, its cgroup, a signal): the call gets a fresh one, once.
                log.warning("a standing runner ended after %d answers", runner.served)
                continue
            return answer.result
        return answer.result

    def close(self) -> None:
        """End every idle runner (those serving end when their call is done)."""
        with self._lock:
            runners = [r for runners in self._idle.values() for r in runners]
            self._idle.clear()
        for runner in runners:
            self._retire(runner)

    # -- internals -------------------------------------------------------------

    def _take(self, key: Hashable) -> StandingRunner | _Start | None:
        now = time.monotonic()
        spent: list[StandingRunner] = []
        with self._lock:
            if self._pid != os.getpid():
                # A forked child owns none of its parent's runners.
                self._idle, self._count, self._pid = {}, 0, os.getpid()
                self._sweeper = None
            waiting = self._idle.get(key, [])
            found: StandingRunner | _Start | None = None
            while waiting:
                runner = waiting.pop()
                if runner.spent(self.limits, now) or now - runner.last_used > (
                    self.limits.idle_seconds
                ):
                    spent.append(runner)
                    continue
                found = runner
                break
            if not waiting:
                self._idle.pop(key, None)
            # Each retired runner frees its place.
            if found is None and self._count - len(spent) < self.limits.capacity:
                self._count += 1
                found = _Start()
        for runner in spent:
            self._retire(runner)
        self._sweep_later()
        return found

    def _start(
        self, start: Callable[[], StandingRunner | SandboxResult]
    ) -> StandingRunner | SandboxResult:
        try:
            started = start()
        except BaseException:
            with self._lock:
                self._count -= 1
            raise
        if isinstance(started, SandboxResult):
            with self._lock:
                self._count -= 1
        return started

    def _give_back(self, key: Hashable, runner: StandingRunner) -> None:
        if runner.ended or runner.spent(self.limits, time.monotonic()):
            self._retire(runner)
            return
        with self._lock:
            if self._pid == os.getpid():
                self._idle.setdefault(key, []).append(runner)
                return
        runner.end()

    def _retire(self, runner: StandingRunner) -> None:
        try:
            runner.end()
        finally:
            with self._lock:
                if self._pid == os.getpid():
                    self._count = max(0, self._count - 1)

    def _sweep_later(self) -> None:
        with self._lock:
            if self._sweeper is not None:
                return
            self._sweeper = threading.Thread(
                target=self._sweep_forever, name="standing-runners", daemon=True
            )
            self._sweeper.start()

    def _sweep_forever(self) -> None:
        """End runners idle past their time; stops when none stand."""
        while True:
            time.sleep(max(0.5, self.limits.idle_seconds / 3))
            now = time.monotonic()
            ending: list[StandingRunner] = []
            with self._lock:
                if self._pid != os.getpid():
                    return
                for key in list(self._idle):
                    keep = []
                    for runner in self._idle[key]:
                        idle = now - runner.last_used > self.limits.idle_seconds
                        if idle or runner.spent(self.limits, now):
                            ending.append(runner)
                        else:
                            keep.append(runner)
                    if keep:
                        self._idle[key] = keep
                    else:
                        del self._idle[key]
                nothing_left = self._count - len(ending) <= 0
                if nothing_left:
                    # The next runner to start starts a sweeper again.
                    self._sweeper = None
            for runner in ending:
                self._retire(runner)
            if nothing_left:
                return


class _Start:
    """A place in the pool reserved for a runner about to start."""
