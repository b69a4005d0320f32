"""One ``docker exec`` with streaming, capped capture and a deadline.

The engine multiplexes stdout and stderr on one socket in frames (an 8-byte
header: stream id, three zero bytes, big-endian length). Frames are parsed as
they arrive and at most ``cap`` bytes per stream are kept, so a flood never
grows the worker's memory.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tools_app.sandbox.capture import CaptureStop
from tools_app.sandbox.readiness import wait_readable

HEADER = struct.Struct(">BxxxL")

# Runs inside the container around every command: applies the call's
# rlimits (prlimit, in bytes), starts the command in a session of its own
# (setsid; the background job is never a group leader, so setsid does not
# fork and the command keeps the job's pid, which is then its process group),
# and when it exits kills whatever it left in that group, so a per-agent
# container never accumulates background processes and the exec's pipes
# close promptly. A SIGTERM kills the group at once. A shell rather than
# python3: an interpreter's start cost some 15-20 ms of every exec.
EXEC_WRAPPER = """
as=$1 cpu=$2 fsize=$3 nofile=$4
shift 5
# A background job's stdin would be /dev/null: hand it the exec's own.
exec 3<&0
prlimit --as="$as" --cpu="$cpu:$((cpu + 1))" --fsize="$fsize" --nofile="$nofile" --core=0 \\
    setsid "$@" <&3 3<&- &
pid=$!
exec 3<&-
trap 'kill -9 -"$pid" 2>/dev/null' TERM
wait "$pid"
status=$?
# Until no process is left in the group (bounded: one stuck in the kernel stays).
n=0
while kill -9 -"$pid" 2>/dev/null && [ "$n" -lt 100000 ]; do n=$((n + 1)); done
exit "$status"
"""


def wrap_command(
    argv: list[str], *, memory_bytes: int, cpu_seconds: int, file_size_bytes: int, open_files: int
) -> list[str]:
    """``argv`` behind the in-container wrapper that applies the call's rlimits."""
    limits = [memory_bytes, cpu_seconds, file_size_bytes, open_files]
    return ["sh", "-c", EXEC_WRAPPER, "sandbox", *map(str, limits), "--", *argv]


CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class ExecOutcome:
    """How one exec ended; ``exit_code`` is None when it was cut off."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    stop: CaptureStop | None


class _Demux:
    """Incremental parser of the engine's multiplexed stream."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = {1: bytearray(), 2: bytearray()}
        self.seen = {1: 0, 2: 0}
        self._header = bytearray()
        self._stream = 0
        self._left = 0

    def feed(self, chunk: bytes) -> bool:
        """Consume ``chunk``; True when a stream passed its cap."""
        view = memoryview(chunk)
        while view:
            if self._left == 0:
                need = HEADER.size - len(self._header)
                self._header += view[:need]
                view = view[need:]
                if len(self._header) < HEADER.size:
                    break
                self._stream, self._left = HEADER.unpack(bytes(self._header))
                self._header.clear()
                continue
            part = view[: self._left]
            view = view[len(part) :]
            self._left -= len(part)
            stream = self._stream if self._stream in (1, 2) else 2
            room = self.cap - len(self.data[stream])
            if room > 0:
                self.data[stream] += part[:room]
            self.seen[stream] += len(part)
            if self.seen[stream] > self.cap:
                return True
        return False


def run_exec(
    api: Any,
    container_id: str,
    *,
    argv: list[str],
    env: Mapping[str, str],
    workdir: str,
    user: str,
    stdin: bytes,
    cap: int,
    deadline: float,
) -> ExecOutcome:
    """Run ``argv`` in the container; stop reading at the deadline or a cap."""
    exec_id = api.exec_create(
        container_id,
        argv,
        stdout=True,
        stderr=True,
        stdin=bool(stdin),
        user=user,
        environment=dict(env),
        workdir=workdir,
    )["Id"]
    wrapper = api.exec_start(exec_id, socket=True)
    raw: socket.socket = getattr(wrapper, "_sock", wrapper)
    demux = _Demux(cap)
    stop: CaptureStop | None = None
    try:
        if stdin:
            raw.sendall(stdin)
            with contextlib.suppress(OSError):
                raw.shutdown(socket.SHUT_WR)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                stop = CaptureStop.TIMEOUT
                break
            ready = wait_readable(raw, remaining)
            if not ready:
                continue
            chunk = raw.recv(CHUNK_BYTES)
            if not chunk:
                break
            if demux.feed(chunk):
                stop = CaptureStop.OUTPUT_LIMIT
                break
    finally:
        with contextlib.suppress(OSError):
            wrapper.close()
        with contextlib.suppress(OSError):
            raw.close()
    exit_code = None if stop is not None else _exit_code(api, exec_id, deadline)
    if stop is None and exit_code is None:
        stop = CaptureStop.TIMEOUT
    return ExecOutcome(
        exit_code=exit_code,
        stdout=bytes(demux.data[1]),
        stderr=bytes(demux.data[2]),
        stdout_truncated=demux.seen[1] > cap,
        stderr_truncated=demux.seen[2] > cap,
        stop=stop,
    )


def _exit_code(api: Any, exec_id: str, deadline: float) -> int | None:
    """The exec's exit code once the engine has recorded it (a moment after EOF)."""
    delay = 0.001
    while True:
        info = api.exec_inspect(exec_id)
        if not info.get("Running") and info.get("ExitCode") is not None:
            return int(info["ExitCode"])
        if time.monotonic() >= deadline:
            return None
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
