"""Running one database statement in a forked child with a memory and CPU ceiling.

A query is the agent's text, and the engine runs it in whatever process asks:
``randomblob(1000000000)``, a recursive CTE of huge rows, or a single 500 MB
PostgreSQL value would otherwise be allocated inside the Celery worker. So the
statement runs in a child forked from the worker (no interpreter start-up, the
engine libraries already loaded) whose address space may grow by at most the
configured budget (``RLIMIT_AS``) and whose CPU time is capped (``RLIMIT_CPU``);
the worker waits on a pipe with a wall-clock deadline and kills the child when it
passes. What crosses the pipe is JSON, read up to a byte ceiling; a failure in the
child comes back as the same refusal or failure the tool would have raised.

The child only ever runs the engine code of this package, never the agent's
program: its trust is the worker's, its only job is to keep the worker's memory
and time out of the query's reach.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolRefusedError
from tools_app.builtin.database.rows import QueryMemoryExceededError, StatementTimeoutError
from tools_app.sandbox.readiness import wait_readable

# Exit status of a child that reported; anything else means it died on the way.
_REPORTED: Final = 0
_READ_CHUNK: Final = 65536
_PR_SET_PDEATHSIG: Final = 1


@dataclass(frozen=True, slots=True)
class ChildLimits:
    """The ceilings of one confined statement."""

    memory_bytes: int  # growth of the address space allowed above the worker's
    cpu_seconds: int
    wall_seconds: float
    max_report_bytes: int


def _vm_size_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _encode_failure(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, ToolRefusedError):
        return {"kind": "refused", "code": exc.code.value, "reason": exc.reason}
    if isinstance(exc, ToolFailedError):
        return {"kind": "failed", "code": exc.code, "message": exc.message}
    if isinstance(exc, StatementTimeoutError):
        return {"kind": "timed_out"}
    if isinstance(exc, MemoryError | QueryMemoryExceededError):
        return {"kind": "memory"}
    return {"kind": "failed", "code": "QUERY_FAILED", "message": f"{type(exc).__name__}: {exc}"}


def _die_with_parent() -> None:
    # A worker killed mid-statement must not leave its child running the query.
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _child(work: Callable[[], Any], limits: ChildLimits, out: int) -> None:
    try:
        _die_with_parent()
        ceiling = _vm_size_bytes() + limits.memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        try:
            report: dict[str, Any] = {"kind": "ok", "value": work()}
        except BaseException as exc:  # every failure is reported, none escapes the child
            report = _encode_failure(exc)
        try:
            data = json.dumps(report, ensure_ascii=False).encode()
        except MemoryError:
            data = b'{"kind": "memory"}'
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]
    finally:
        # Never run the worker's exit handlers, flush its buffers or close its connections.
        os._exit(_REPORTED)


def _read_report(fd: int, pid: int, limits: ChildLimits) -> bytes | None:
    """The child's bytes, or None when the deadline passed first (the child is killed)."""
    deadline = time.monotonic() + limits.wall_seconds
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            return None
        ready = wait_readable(fd, left)
        if not ready:
            continue
        chunk = os.read(fd, _READ_CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limits.max_report_bytes:
            os.kill(pid, signal.SIGKILL)
            raise ToolFailedError(
                f"the result is larger than {limits.max_report_bytes} bytes; nothing is returned",
                code="RESULT_TOO_LARGE",
            )
        chunks.append(chunk)


def _decode(data: bytes, status: int) -> Any:
    if not data:
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
            raise StatementTimeoutError
        raise QueryMemoryExceededError  # a child that dies silently ran out while reporting
    report = json.loads(data)
    kind = report["kind"]
    if kind == "ok":
        return report["value"]
    if kind == "refused":
        raise ToolRefusedError(RefusalCode(report["code"]), report["reason"])
    if kind == "timed_out":
        raise StatementTimeoutError
    if kind == "memory":
        raise QueryMemoryExceededError
    raise ToolFailedError(report["message"], code=report["code"])


def run_confined(work: Callable[[], Any], limits: ChildLimits) -> Any:
    """``work()`` (returning JSON-able data) in a forked child under ``limits``.

    Raises what the engine raised (ToolRefusedError, ToolFailedError), or
    StatementTimeoutError / QueryMemoryExceededError when a ceiling stopped it.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(work, limits, write_end)
    os.close(write_end)
    try:
        data = _read_report(read_end, pid, limits)
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    if data is None:
        raise StatementTimeoutError
    return _decode(data, status)
