"""PURE: how many bytes and entries a workspace holds, and what one call added.

Each entry counts the larger of its apparent size and its allocated blocks, so a
sparse file (``truncate -s 100G``) counts at its length and a directory of many
small files at the blocks it takes. Symbolic links are never followed: a link
counts its own size, what it points at belongs to wherever it lives. Every entry
below the root (file, directory, link, pipe...) counts once towards the entry
limit, whatever its size: thirty thousand empty files are thirty thousand entries.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

BLOCK_BYTES = 512


@dataclass(frozen=True, slots=True)
class Entry:
    """One file as the snapshot saw it."""

    charged: int  # bytes counted against the quota
    size: int
    inode: int


@dataclass(frozen=True, slots=True)
class WorkspaceUsage:
    """The bytes and entries a workspace holds, each regular file's entry by relative
    path, its directories, and its other entries (links, pipes...) with their inodes."""

    total: int
    files: dict[str, Entry] = field(default_factory=dict)
    dirs: frozenset[str] = frozenset()
    others: dict[str, int] = field(default_factory=dict)

    @property
    def entries(self) -> int:
        """Entries below the root, of every kind."""
        return len(self.files) + len(self.dirs) + len(self.others)


def workspace_usage(root: Path) -> WorkspaceUsage:
    """Walk ``root`` without following links; entries that vanish mid-walk are skipped."""
    total = 0
    files: dict[str, Entry] = {}
    dirs: set[str] = set()
    others: dict[str, int] = {}
    # (directory on disk, its path relative to root with a trailing separator)
    pending: list[tuple[str, str]] = [(str(root), "")]
    while pending:
        directory, prefix = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            charged = max(info.st_size, info.st_blocks * BLOCK_BYTES)
            total += charged
            relative = prefix + entry.name
            if stat.S_ISDIR(info.st_mode):
                pending.append((entry.path, relative + os.sep))
                dirs.add(relative)
            elif stat.S_ISREG(info.st_mode):
                files[relative] = Entry(charged, info.st_size, info.st_ino)
            else:
                others[relative] = info.st_ino
    return WorkspaceUsage(total, files, frozenset(dirs), others)


def human_size(size: int) -> str:
    """``1536`` -> ``1.5 KiB``: sizes in refusals people read."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
