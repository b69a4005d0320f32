"""Streaming capture of a child's stdout and stderr, capped while reading.

Both pipes are polled together (a child blocked writing one pipe while we
block reading the other would deadlock). At most ``cap`` bytes per stream are
kept; the moment a stream passes its cap the capture stops and asks for the
child to be killed, so a flood never grows the worker's memory.
"""

from __future__ import annotations

import contextlib
import enum
import math
import os
import select
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
    *,
    pidfd: int,
    stdout_fd: int,
    stderr_fd: int,
    stdin_fd: int | None,
    stdin: bytes,
    cap: int,
    deadline: float,
    exit_drain_seconds: float,
) -> CaptureOutcome:
    """Feed ``stdin`` and read both pipes until EOF, the deadline, or a cap.

    ``pidfd`` becomes readable when the main process exits; if something it
    left behind still holds the pipes open, keep reading for
    ``exit_drain_seconds`` and then stop with ``LEFTOVER_PROCESSES`` so the
    caller kills the rest. ``stdin_fd`` is closed here once fed; the read
    ends stay open for the caller to close.
    """
    streams = {stdout_fd: _Stream(cap), stderr_fd: _Stream(cap)}
    pending = memoryview(stdin)
    stop: CaptureStop | None = None
    poller = select.poll()
    for fd in streams:
        poller.register(fd, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    if stdin_fd is not None:
        if pending:
            os.set_blocking(stdin_fd, False)
            poller.register(stdin_fd, select.POLLOUT)
        else:
            os.close(stdin_fd)
            stdin_fd = None
    try:
        drain_until: float | None = None
        open_reads = set(streams)
        while open_reads:
            now = time.monotonic()
            limit = deadline if drain_until is None else min(deadline, drain_until)
            if now >= limit:
                stop = CaptureStop.TIMEOUT if now >= deadline else CaptureStop.LEFTOVER_PROCESSES
                break
            for fd, _ in poller.poll(max(1, math.ceil((limit - now) * 1000))):
                if fd == pidfd:
                    poller.unregister(pidfd)
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
                        poller.unregister(fd)
                        os.close(fd)
                        stdin_fd = None
                elif fd in open_reads:
                    chunk = os.read(fd, CHUNK_BYTES)
                    if not chunk:
                        poller.unregister(fd)
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
        if stdin_fd is not None:
            with contextlib.suppress(OSError):
                os.close(stdin_fd)
    out, err = streams[stdout_fd], streams[stderr_fd]
    return CaptureOutcome(
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        stop=stop,
    )
