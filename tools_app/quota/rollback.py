"""Bringing a workspace back under its quota after a call wrote past it.

What is undone, in order, until the workspace fits its bytes: files the call
created are removed (largest first), then files that grew are cut back to their
size before the call (what was appended goes; what was there stays). Then, until
it fits its entry limit: the other entries the call created (files, links,
pipes) are removed, last path first. Last, directories the call created and left
empty are removed. A file the call replaced is never touched: its old content is
gone either way, and removing the new one would lose both. Every step goes
through directory descriptors opened without following links, so a path swapped
for a symbolic link while this runs leads nowhere.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tools_app.quota.usage import WorkspaceUsage

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class Undone:
    """What the rollback did, for the reason the agent reads."""

    removed: list[str] = field(default_factory=list)
    cut_back: list[str] = field(default_factory=list)
    freed: int = 0
    dirs_removed: int = 0
    """Directories the call created and left empty, removed at the end."""


@contextmanager
def _parent_fd(root: Path, relative: str) -> Iterator[tuple[int, str]]:
    """A descriptor of the directory holding ``relative``, reached without links."""
    *parents, name = relative.split(os.sep)
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parents:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        yield fd, name
    finally:
        os.close(fd)


def _remove(root: Path, relative: str, inode: int, *, regular: bool = True) -> bool:
    """Unlink ``relative`` if it is still the entry seen (a regular file, or with
    ``regular`` false any entry but a directory)."""
    try:
        with _parent_fd(root, relative) as (fd, name):
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            kind_ok = stat.S_ISREG(info.st_mode) or (not regular and not stat.S_ISDIR(info.st_mode))
            if info.st_ino != inode or not kind_ok:
                return False
            os.unlink(name, dir_fd=fd)
            return True
    except OSError:
        return False


def _cut_back(root: Path, relative: str, inode: int, size: int) -> bool:
    try:
        with _parent_fd(root, relative) as (fd, name):
            handle = os.open(name, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            try:
                info = os.fstat(handle)
                if info.st_ino != inode or not stat.S_ISREG(info.st_mode):
                    return False
                os.ftruncate(handle, size)
                return True
            finally:
                os.close(handle)
    except OSError:
        return False


def _remove_empty_dirs(root: Path, before: WorkspaceUsage, after: WorkspaceUsage) -> int:
    """Remove the directories the call created and left empty; return how many went."""
    removed = 0
    # Deepest first, so a new tree of empty directories goes entirely.
    for relative in sorted(after.dirs - before.dirs, key=lambda p: -p.count(os.sep)):
        try:
            with _parent_fd(root, relative) as (fd, name):
                os.rmdir(name, dir_fd=fd)
            removed += 1
        except OSError:
            continue  # not empty, gone, or not a directory any more: leave it
    return removed


def roll_back(
    root: Path,
    *,
    before: WorkspaceUsage,
    after: WorkspaceUsage,
    quota: int | None,
    quota_entries: int | None = None,
) -> Undone:
    """Undo what the call added until ``root`` holds at most ``quota`` bytes and
    ``quota_entries`` entries (if it can; ``None``: that limit is off)."""
    undone = Undone()
    if quota is not None:
        _bytes_back(root, before, after, quota, undone)
    if quota_entries is not None:
        _entries_back(root, before, after, quota_entries, undone)
    undone.dirs_removed = _remove_empty_dirs(root, before, after)
    return undone


def _entries_back(
    root: Path, before: WorkspaceUsage, after: WorkspaceUsage, quota_entries: int, undone: Undone
) -> None:
    # What the byte limit already removed counts; the directories the call created go
    # at the end only if they are left empty, so they are not counted on here.
    gone = set(undone.removed)
    excess = after.entries - len(gone) - quota_entries
    created: list[tuple[str, int, bool]] = [
        (path, entry.inode, True)
        for path, entry in after.files.items()
        if path not in before.files and path not in gone
    ]
    created += [
        (path, inode, False) for path, inode in after.others.items() if path not in before.others
    ]
    for path, inode, regular in sorted(created, reverse=True):
        if excess <= 0:
            break
        if _remove(root, path, inode, regular=regular):
            undone.removed.append(path)
            excess -= 1


def _bytes_back(
    root: Path, before: WorkspaceUsage, after: WorkspaceUsage, quota: int, undone: Undone
) -> None:
    excess = after.total - quota
    created = sorted(
        (
            (entry.charged, path, entry)
            for path, entry in after.files.items()
            if path not in before.files
        ),
        reverse=True,
    )
    for charged, path, entry in created:
        if excess <= 0:
            break
        if _remove(root, path, entry.inode):
            undone.removed.append(path)
            undone.freed += charged
            excess -= charged
    for path, entry in after.files.items():
        if excess <= 0:
            break
        old = before.files.get(path)
        if old is None or old.inode != entry.inode or entry.size <= old.size:
            continue
        if _cut_back(root, path, entry.inode, old.size):
            undone.cut_back.append(path)
            undone.freed += entry.charged - old.charged
            excess -= entry.charged - old.charged
