"""Streaming capture of a child's stdout and stderr, capped while reading.

Both pipes are polled together (a child blocked writing one pipe while we
block reading the other would deadlock). At most ``cap`` bytes per stream are
kept; the moment a stream passes its cap the capture stops and asks for the
child to be killed, so a flood never grows the worker's memory.
"""

from __future__ import annotations

import contextlib
import enum
import os
import selectors
import subprocess
import time
from dataclasses import dataclass, field

CHUNK_BYTES = 64 * 1024


class CaptureStop(enum.Enum):
    """Why capture stopped before the child closed its pipes."""

    TIMEOUT = "timeout"
    OUTPUT_LIMIT = "output_limit"
    LEFTOVER_PROCESSES = "leftover_processes"


@dataclass(slots=True)
class _Stream:
    cap: int
    data: bytearray = field(default_factory=bytearray)
    seen: int = 0

    @property
    def truncated(self) -> bool:
        return self.seen > self.cap

    def take(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.seen += len(chunk)


@dataclass(frozen=True, slots=True)
class CaptureOutcome:
    """The captured bytes and why capture stopped early, if it did."""

    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    stop: CaptureStop | None


def capture_output(
    proc: subprocess.Popen[bytes],
    *,
    stdin: bytes,
    cap: int,
    deadline: float,
    exit_drain_seconds: float,
) -> CaptureOutcome:
    """Feed ``stdin`` and read both pipes until EOF, the deadline, or a cap.

    When the main process has exited but something it left behind still
    holds the pipes open, keep reading for ``exit_drain_seconds`` and then stop
    with ``LEFTOVER_PROCESSES`` so the caller kills the rest.
    """
    assert proc.stdout is not None and proc.stderr is not None
    streams = {proc.stdout.fileno(): _Stream(cap), proc.stderr.fileno(): _Stream(cap)}
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    pending = memoryview(stdin)
    stop: CaptureStop | None = None
    pidfd = os.pidfd_open(proc.pid)
    selector = selectors.DefaultSelector()
    try:
        for fd in streams:
            selector.register(fd, selectors.EVENT_READ)
        selector.register(pidfd, selectors.EVENT_READ)
        stdin_fd: int | None = None
        if proc.stdin is not None:
            stdin_fd = proc.stdin.fileno()
            if pending:
                os.set_blocking(stdin_fd, False)
                selector.register(stdin_fd, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
                stdin_fd = None
        drain_until: float | None = None
        open_reads = set(streams)
        while open_reads:
            now = time.monotonic()
            limit = deadline if drain_until is None else min(deadline, drain_until)
            if now >= limit:
                stop = CaptureStop.TIMEOUT if now >= deadline else CaptureStop.LEFTOVER_PROCESSES
                break
            for key, _ in selector.select(limit - now):
                fd = key.fd
                if fd == pidfd:
                    selector.unregister(pidfd)
                    drain_until = time.monotonic() + exit_drain_seconds
                elif fd == stdin_fd:
                    try:
                        written = os.write(fd, pending[:CHUNK_BYTES])
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:
                        written = len(pending)
                    pending = pending[written:]
                    if not pending:
                        selector.unregister(fd)
                        assert proc.stdin is not None
                        proc.stdin.close()
                        stdin_fd = None
                else:
                    chunk = os.read(fd, CHUNK_BYTES)
                    if not chunk:
                        selector.unregister(fd)
                        open_reads.discard(fd)
                        continue
                    stream = streams[fd]
                    stream.take(chunk)
                    if stream.truncated:
                        stop = CaptureStop.OUTPUT_LIMIT
                        break
            if stop is not None:
                break
    finally:
        selector.close()
        os.close(pidfd)
        if proc.stdin is not None and not proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
    out, err = streams[out_fd], streams[err_fd]
    return CaptureOutcome(
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        stop=stop,
    )
