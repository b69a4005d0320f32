"""The multiprocess directory: named before any metric is made, tidied as processes
start and end.

Every console process of a host (web nodes, workers, beat; in one container or in
several sharing a volume) writes its counters there, and a scrape of any web node
sums them. A process is named in its files by ``identity.process_identifier`` and
holds a lock there while it lives, so tidying never touches a live process's files.

Pure: no Django imports (settings call it while they load).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from common.platform.metrics import identity

ENV_NAME = "PROMETHEUS_MULTIPROC_DIR"
DB_SUFFIX = ".db"
# The library's gauges that only a live process may report (gauge_live<mode>_<id>.db).
LIVE_GAUGE_PREFIX = "gauge_live"


def multiprocess_dir_ensure(default: Path) -> Path:
    """Name the directory every process of this host writes its metric files to.

    An operator's ``PROMETHEUS_MULTIPROC_DIR`` wins; otherwise ``default`` (under
    var/, private to the console's user). Tidies what dead processes left, then
    names this process there (it counts as live until it exits). Must run before any
    metric is made: the library's file-backed values are replaced by ones named by
    this process's identifier.
    """
    chosen = Path(os.environ.get(ENV_NAME) or default)
    chosen.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.environ[ENV_NAME] = str(chosen)
    multiprocess_dir_tidy(chosen)
    _values_install()
    # Reads the process at exit: a forked child inherits this handler.
    atexit.register(process_metrics_release)
    return chosen


def _values_install() -> None:
    from prometheus_client import values

    if getattr(values.ValueClass, "_synthorg_named", False):
        return
    # Building the class names this process, which takes its lock: from now on it
    # counts as live here, reader (a web node's scrape) as much as writer.
    value_class = values.MultiProcessValue(process_identifier=identity.process_identifier)
    value_class._synthorg_named = True
    values.ValueClass = value_class


def process_metrics_release() -> None:
    """Drop what only a live process may report (its live gauges) and the lock that
    says it lives, as the library asks of every process that exits; its counters
    stay summed into the totals. Touches this process's own files only."""
    from prometheus_client import multiprocess

    held = identity.process_identifier_held()
    if held is None:
        return
    with contextlib.suppress(Exception):
        multiprocess.mark_process_dead(held, os.environ.get(ENV_NAME))
    identity.process_lock_release()


@dataclass(frozen=True)
class Tidied:
    live: int  # other processes using the directory that still live
    dead: int  # processes found dead, whose leftovers were removed
    removed: int  # files removed


def _owner(name: str) -> str | None:
    """The identifier a file of the directory belongs to, or None for anything else."""
    if name.startswith(identity.LOCK_PREFIX) and name.endswith(identity.LOCK_SUFFIX):
        return name[len(identity.LOCK_PREFIX) : -len(identity.LOCK_SUFFIX)] or None
    if name.endswith(DB_SUFFIX) and "_" in name:
        return name[: -len(DB_SUFFIX)].rsplit("_", 1)[1] or None
    return None


def _dead_claim(directory: Path, owner: str) -> int | None:
    """The lock of ``owner`` when it is dead (held until closed: a process starting
    under the same name waits meanwhile), or None when it lives or cannot be told."""
    if owner.isdigit() and _pid_lives_here(int(owner)):
        # A file named by the pid alone (the library's own naming, an older release):
        # only a process of this pid namespace can be told dead.
        return None
    path = identity.lock_path(directory, owner)
    try:
        fd = identity.lock_open(path)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    if not identity.lock_is_the_file(fd, path):
        os.close(fd)
        return None
    return fd


def _pid_lives_here(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def multiprocess_dir_tidy(path: Path) -> Tidied:
    """Remove what dead processes left in the directory, never a live process's files.

    A dead process's live gauges always go. Its counters and histograms stay summed
    while any process using the directory lives (removing them would lower the
    totals a web node serves, which Prometheus reads as a reset and counts again);
    once none lives they all go, as the library asks of a fresh start, and the totals
    start again as after a restart of every process. Each removal happens while this
    process holds the dead process's lock, so a process starting under the same name
    waits for it.
    """
    if not path.is_dir():
        return Tidied(live=0, dead=0, removed=0)
    owned: dict[str, list[Path]] = {}
    for entry in path.iterdir():
        owner = _owner(entry.name)
        if owner is not None:
            owned.setdefault(owner, []).append(entry)
    own = identity.process_identifier_held()
    claimed: dict[str, int] = {}
    live = 0
    removed = 0
    try:
        for owner in sorted(owned):
            fd = None if owner == own else _dead_claim(path, owner)
            if fd is None:
                live += 1
            else:
                claimed[owner] = fd
        everything = live == 0
        for owner in claimed:
            for entry in owned[owner]:
                if entry.name.endswith(identity.LOCK_SUFFIX):
                    continue
                if everything or entry.name.startswith(LIVE_GAUGE_PREFIX):
                    with contextlib.suppress(FileNotFoundError):
                        entry.unlink()
                        removed += 1
            with contextlib.suppress(FileNotFoundError):
                identity.lock_path(path, owner).unlink()
    finally:
        for fd in claimed.values():
            os.close(fd)
    return Tidied(live=live, dead=len(claimed), removed=removed)
