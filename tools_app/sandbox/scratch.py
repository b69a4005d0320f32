"""Private HOME/TMPDIR directories for calls, reused when a call leaves one empty.

Creating a directory is cheap, but removing one costs a journal commit on a
busy disk. A call's directory therefore goes back to a small per-process pool
when the call left it exactly as it got it: empty, mode 0700, owned by the
sandbox user, no extended attributes (so no ACL either). Anything else is
removed with its contents as before. The next call gets an empty private
directory either way. Names carry the worker's pid namespace and pid
(``owners``); pooled directories are removed when the worker exits, and those
of workers of this namespace that no longer exist when a pool is first used.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import stat
import threading
from pathlib import Path

from common.platform.private_state import traversable_dir
from tools_app.sandbox.linux.identity import SandboxIdentity
from tools_app.sandbox.linux.owners import left_by_gone_process, owner_tag

POOL_SIZE = 8
PREFIX = "call-"

_pools: dict[tuple[Path, int, int], list[Path]] = {}
_lock = threading.Lock()


class ScratchDir:
    """A private, empty HOME/TMPDIR for one call; emptied or removed after it."""

    def __init__(self, base: Path, identity: SandboxIdentity) -> None:
        self._key = (base, identity.uid, identity.gid)
        self._identity = identity
        with _lock:
            pool = _pools.get(self._key)
            if pool is None:
                pool = _pools[self._key] = []
                _make_base(base)
                _sweep_stale(base)
            reused = pool.pop() if pool else None
        self.path = reused if reused is not None else _make(base, identity)

    def remove(self) -> None:
        """Return the directory to the pool when untouched, else delete it and its contents."""
        if self._reusable():
            with _lock:
                pool = _pools.get(self._key)
                if pool is not None and len(pool) < POOL_SIZE:
                    pool.append(self.path)
                    return
        _delete(self.path)

    def _reusable(self) -> bool:
        try:
            st = os.lstat(self.path)
            with os.scandir(self.path) as entries:
                empty = next(entries, None) is None
            attributes = os.listxattr(self.path, follow_symlinks=False)
        except OSError:
            return False
        return (
            empty
            and not attributes
            and stat.S_ISDIR(st.st_mode)
            and stat.S_IMODE(st.st_mode) == 0o700
            and (st.st_uid, st.st_gid) == self._owner()
        )

    def _owner(self) -> tuple[int, int]:
        if self._identity.switch:
            return self._identity.uid, self._identity.gid
        return os.geteuid(), os.getegid()


def _make(base: Path, identity: SandboxIdentity) -> Path:
    while True:
        path = base / f"{PREFIX}{owner_tag()}-{os.urandom(8).hex()}"
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        except FileNotFoundError:
            # The base was removed meanwhile: make it again.
            _make_base(base)
            continue
        if identity.switch:
            os.chown(path, identity.uid, identity.gid)
        # mkdir applies the umask; the mode must be exactly 0700.
        os.chmod(path, 0o700)
        return path


def _make_base(base: Path) -> None:
    # The sandbox's user must pass through it (and what is above) to its own directory.
    traversable_dir(base, parents=True)


def _delete(path: Path) -> None:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return
    except OSError:
        shutil.rmtree(path, ignore_errors=True)


def _sweep_stale(base: Path) -> None:
    """Delete directories whose worker process is gone."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            owner = entry.name.removeprefix(PREFIX).split("-", 1)[0]
            if entry.name.startswith(PREFIX) and left_by_gone_process(owner):
                _delete(Path(entry.path))


def drain_pools() -> None:
    """Delete every pooled directory of this process (at exit)."""
    with _lock:
        paths = [path for pool in _pools.values() for path in pool]
        for pool in _pools.values():
            pool.clear()
    for path in paths:
        _delete(path)


def _forget_in_child() -> None:
    global _lock
    _lock = threading.Lock()
    _pools.clear()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(drain_pools)
