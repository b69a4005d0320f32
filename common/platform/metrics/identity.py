"""Who a process is in the multiprocess directory, and how others tell that it lives.

Processes of several containers may share one directory, and each container has its
own pid namespace: the daphne of one container and the worker of another are both
pid 1. The library names a process's files by its pid alone, so both would write
into one file and overwrite each other's counts. Here a process is named by its
host name, its pid namespace and its pid, which no two live processes on one host
share. While it lives it holds a lock on a file of its own in the directory
(``process_<identifier>.lock``); the kernel drops the lock when the process dies,
however it dies, so any process of any container can tell a dead process's files
from a live one's.

Pure: no Django imports (settings install it while they load).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import socket
import threading
import time
from pathlib import Path

LOCK_PREFIX = "process_"
LOCK_SUFFIX = ".lock"
# A tidying process holds a dead process's lock for milliseconds; a lock held longer
# belongs to a live process that already has this name.
CLAIM_TRIES = 40
CLAIM_PAUSE_SECONDS = 0.05

_UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")


class _Held:
    """This process's name and the lock that says it lives (one per process)."""

    def __init__(self) -> None:
        self.pid = 0
        self.identifier = ""
        self.lock_fd: int | None = None
        self.lock_path: Path | None = None
        self.guard = threading.Lock()


_held = _Held()


def _pid_namespace() -> int:
    """The inode of this process's pid namespace: one per container on a host."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def identifier_for(pid: int, *, host: str | None = None, namespace: int | None = None) -> str:
    """The name of process ``pid`` of this pid namespace in the directory's file names.

    No ``_`` (the library splits file names on it) and no glob characters (its
    cleanup globs for the name).
    """
    raw_host = socket.gethostname() if host is None else host
    safe_host = _UNSAFE.sub("-", raw_host).strip("-.")[:48] or "host"
    space = _pid_namespace() if namespace is None else namespace
    return f"{safe_host}-{space}-{pid}"


def lock_path(directory: Path, identifier: str) -> Path:
    return directory / f"{LOCK_PREFIX}{identifier}{LOCK_SUFFIX}"


def lock_open(path: Path) -> int:
    """A descriptor of the lock file at ``path``, made if missing. Read-only is enough
    for flock, so a process of another user can test a lock it cannot write."""
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    # Readable by the other users of the directory whatever the umask (the owner only).
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o644)
    return fd


def lock_is_the_file(fd: int, path: Path) -> bool:
    """Whether ``fd`` still is the file named ``path`` (a tidying process removes the
    lock file of a dead process while it holds that lock)."""
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except OSError:
        return False


def identifier_claim(directory: Path, identifier: str) -> tuple[str, int | None, Path | None]:
    """Hold the lock that says ``identifier`` lives; another name if a live process
    already holds it (two live processes never write one file)."""
    for attempt in range(CLAIM_TRIES * 2):
        if attempt == CLAIM_TRIES:
            identifier = f"{identifier}-{secrets.token_hex(4)}"
        path = lock_path(directory, identifier)
        try:
            fd = lock_open(path)
        except OSError:
            # A directory this process cannot write: it cannot write counts there either.
            return identifier, None, None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            time.sleep(CLAIM_PAUSE_SECONDS)
            continue
        except OSError:
            # A file system without locks: named, but others cannot tell it lives.
            os.close(fd)
            return identifier, None, None
        if lock_is_the_file(fd, path):
            return identifier, fd, path
        os.close(fd)
    return identifier, None, None


def process_identifier() -> str:
    """This process's name in the directory; the first call in a process (settings
    install it) and in each forked child (at its first write) takes the lock that
    says it lives. Called by the library before every write, so it returns at once
    after the first call."""
    pid = os.getpid()
    if _held.pid == pid:
        return _held.identifier
    with _held.guard:
        if _held.pid != pid:
            directory = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
            identifier, fd, path = identifier_claim(directory, identifier_for(pid))
            _held.identifier, _held.lock_fd, _held.lock_path = identifier, fd, path
            _held.pid = pid
    return _held.identifier


def process_identifier_held() -> str | None:
    """This process's name if it holds its lock in the directory."""
    if _held.pid == os.getpid() and _held.lock_fd is not None:
        return _held.identifier
    return None


def process_lock_release() -> None:
    """Remove this process's lock file and drop the lock (as it exits)."""
    if _held.pid != os.getpid() or _held.lock_fd is None:
        return
    fd, path = _held.lock_fd, _held.lock_path
    _held.lock_fd = _held.lock_path = None
    # Unlinked first: while the lock is held nobody else may remove or reuse the file.
    if path is not None and lock_is_the_file(fd, path):
        with contextlib.suppress(OSError):
            path.unlink()
    os.close(fd)


def _forget_after_fork() -> None:
    # A forked child is another process: it takes its own name and lock when it first
    # writes. Its copy of the parent's descriptor would keep the parent's flock alive
    # after the parent died.
    if _held.lock_fd is not None:
        with contextlib.suppress(OSError):
            os.close(_held.lock_fd)
    _held.pid, _held.identifier, _held.lock_fd, _held.lock_path = 0, "", None, None
    _held.guard = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
