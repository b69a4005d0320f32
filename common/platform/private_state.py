"""The console's private state under ``var/``: who may read it, and repairing it.

Pure: no Django imports (the launcher uses it before Django is configured).

Everything under ``var/`` (database and journal files, the secret key, demo
credentials, the Redis socket and its directory, caches) belongs to the
console's user alone: files 0600, directories 0700. Two directories are
exceptions, searchable but not listable by others (0711): ``var/`` itself and
``var/workspaces/``, because the namespace backend's bubblewrap runs as the
sandbox user and must pass through them to bind an agent's workspace. The
agents' workspaces below ``var/workspaces/`` are the agents' data, granted to
the sandbox user on purpose, and are left alone.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

WORKSPACES = "workspaces"
# Directories others may pass through (search) but never list or write.
TRAVERSE_MODE = 0o711
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
# The console's processes create everything private from the first write.
PRIVATE_UMASK = 0o077


@dataclass(frozen=True, slots=True)
class LooseMode:
    """An entry under ``var/`` that gave others more than it should."""

    path: Path
    mode: int
    allowed: int

    def describe(self) -> str:
        return f"{self.path} was {self.mode:04o}, now {self.mode & self.allowed:04o}"


def ensure_var_layout(var: Path) -> None:
    """Create ``var/`` and ``var/workspaces/`` with their modes (idempotent)."""
    for directory in (var, var / WORKSPACES):
        directory.mkdir(mode=TRAVERSE_MODE, parents=True, exist_ok=True)
        if stat.S_IMODE(directory.stat().st_mode) != TRAVERSE_MODE:
            directory.chmod(TRAVERSE_MODE)


def create_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 unless it exists (a database before its first open)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))


def traversable_dir(path: Path, *, parents: bool = False, exist_ok: bool = True) -> Path:
    """Make ``path`` (with ``parents``, each missing directory above it too) with mode
    0711 exactly, whatever the umask (the console's is 077): others may pass through it
    to what is bound below, never list it. Directories that exist are left as they are;
    ``path`` existing raises FileExistsError unless ``exist_ok``."""
    above = [p for p in reversed(path.parents) if not p.exists()] if parents else []
    for directory in above:
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=TRAVERSE_MODE)
            directory.chmod(TRAVERSE_MODE)
    try:
        path.mkdir(mode=TRAVERSE_MODE)
    except FileExistsError:
        if not exist_ok:
            raise
        return path
    path.chmod(TRAVERSE_MODE)
    return path


def private_dir(path: Path) -> Path:
    """Create a private (0700) directory under ``var/`` (idempotent)."""
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o077)
    return path


def _allowed(var: Path, path: Path, st: os.stat_result) -> int:
    """The most a mode may grant at ``path``: owner bits untouched, others as the layout says."""
    if stat.S_ISDIR(st.st_mode) and path in (var, var / WORKSPACES):
        return 0o7700 | (TRAVERSE_MODE & 0o077)
    return 0o7700


def _entries(var: Path) -> Iterator[tuple[Path, os.stat_result]]:
    """``var/`` and everything below it, agents' workspaces excepted; links not followed."""
    yield var, var.lstat()
    for root, dirs, files in os.walk(var):
        here = Path(root)
        if here == var / WORKSPACES:
            # The workspace directories themselves are the agents' data.
            dirs[:] = []
            continue
        for name in [*dirs, *files]:
            path = here / name
            with contextlib.suppress(FileNotFoundError):
                yield path, path.lstat()


def loose_modes(var: Path) -> list[LooseMode]:
    """Entries under ``var/`` whose mode gives group or others more than allowed."""
    found: list[LooseMode] = []
    for path, st in _entries(var):
        if stat.S_ISLNK(st.st_mode):
            continue
        mode = stat.S_IMODE(st.st_mode)
        allowed = _allowed(var, path, st)
        if mode & ~allowed:
            found.append(LooseMode(path, mode, allowed))
    return found


def repair_modes(var: Path) -> list[LooseMode]:
    """Take away from group and others what :func:`loose_modes` finds; what was found."""
    found = loose_modes(var)
    for entry in found:
        with contextlib.suppress(FileNotFoundError):
            os.chmod(entry.path, entry.mode & entry.allowed)
    return found
