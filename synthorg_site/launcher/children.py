"""Child processes of the launcher: started in their own sessions, watched, stopped in order."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

_PR_SET_PDEATHSIG = 1


def _die_with_launcher(launcher_pid: int) -> None:
    """In the child: get SIGTERM if the launcher dies, even by SIGKILL; own session."""
    os.setsid()
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass
    if os.getppid() != launcher_pid:
        # The launcher died before the request took effect: nobody would stop us.
        os._exit(1)


@dataclass(frozen=True)
class ChildSpec:
    name: str
    argv: Sequence[str]
    env: dict[str, str] | None = None
    # Ready when this returns True (polled); None means ready at once.
    ready: Callable[[], bool] | None = None
    ready_timeout: float = 60.0
    # Started again when it exits on its own (a worker or beat that lost its broker);
    # a child that is not restarted stops the whole console when it exits.
    restart: bool = False
    # How long it may take to stop after SIGTERM before SIGKILL (a worker finishes the
    # calls it runs first).
    stop_grace: float = 10.0


@dataclass
class Child:
    spec: ChildSpec
    process: subprocess.Popen[bytes]
    readers: list[threading.Thread] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.spec.name


def _pump(name: str, stream: IO[bytes], out: IO[str], lock: threading.Lock) -> None:
    """Copy a child's output line by line, each line prefixed with the child's name."""
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace").rstrip("\n")
        with lock:
            out.write(f"{name:>7} | {line}\n")
            out.flush()
    stream.close()


def _pump_to_file(stream: IO[bytes], path: Path) -> None:
    """Copy a child's output to its own log file (appended, private to the console's user)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "ab", buffering=0) as log:
        for raw in iter(stream.readline, b""):
            log.write(raw)
    stream.close()


def log_tail(path: Path, lines: int = 20) -> list[str]:
    """The last ``lines`` lines of a child's log file (none when it has none)."""
    try:
        with open(path, "rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - 16384))
            text = log.read().decode(errors="replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]


class ChildFailedError(RuntimeError):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name


_output_lock = threading.Lock()


def start_child(
    spec: ChildSpec, *, out: IO[str] = sys.stdout, log_dir: Path | None = None
) -> Child:
    """Start ``spec``; its output goes to ``log_dir/<name>.log`` when given, else to
    ``out`` line by line with its name."""
    process = subprocess.Popen(
        list(spec.argv),
        env=spec.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=functools.partial(_die_with_launcher, os.getpid()),
    )
    child = Child(spec=spec, process=process)
    assert process.stdout is not None
    if log_dir is not None:
        reader = threading.Thread(
            target=_pump_to_file, args=(process.stdout, log_dir / f"{spec.name}.log"), daemon=True
        )
    else:
        reader = threading.Thread(
            target=_pump, args=(spec.name, process.stdout, out, _output_lock), daemon=True
        )
    reader.start()
    child.readers.append(reader)
    return child


# Sleeps up to the given seconds; True when the launcher is asked to stop (or hurry).
Interrupted = Callable[[float], bool]


def wait_ready(child: Child, *, interrupted: Interrupted, poll: float = 0.1) -> bool:
    """Block until the child says it is ready (True) or a stop is asked for (False);
    raise if it exits or takes too long first."""
    if child.spec.ready is None:
        return True
    deadline = time.monotonic() + child.spec.ready_timeout
    while time.monotonic() < deadline:
        code = child.process.poll()
        if code is not None:
            raise ChildFailedError(child.name, f"exited with code {code} while starting")
        try:
            if child.spec.ready():
                return True
        except Exception:  # noqa: S110 - not ready yet
            pass
        if interrupted(poll):
            return False
    raise ChildFailedError(child.name, f"not ready after {child.spec.ready_timeout:g}s")


def stop_child(
    child: Child,
    *,
    hurry: Interrupted | None = None,
    grace: float | None = None,
    poll: float = 0.1,
) -> int | None:
    """SIGTERM the child's whole process group, SIGKILL it after the grace period (its
    spec's ``stop_grace`` unless given; at once when ``hurry`` says so: a second Ctrl-C)."""
    process = child.process
    if process.poll() is None:
        _signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + (child.spec.stop_grace if grace is None else grace)
        while process.poll() is None and time.monotonic() < deadline:
            if hurry is not None and hurry(poll):
                break
            if hurry is None:
                time.sleep(poll)
        if process.poll() is None:
            _signal_group(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
    # Reap anything of its group left behind (pool workers of a killed parent).
    _signal_group(process.pid, signal.SIGKILL)
    for reader in child.readers:
        reader.join(timeout=2)
    return process.returncode


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
