"""Regular files with more than one hard link in a workspace.

A hard link names an inode, not a place: a link planted in a workspace may be
another agent's file or one of the host's, and its path proves nothing. The file
tools refuse such files (``fs_runner.require_regular``); a program started in the
workspace would read them all the same, so ``shell_command`` looks for them first
and refuses to start while any is there. Both refuse: the rule is the same.

The walk never follows symlinks; it stops after ``max_entries`` entries, and a
workspace too large to check is refused rather than trusted.
"""

from __future__ import annotations

import os
import stat
from typing import Final

SHOWN_MAX: Final = 5


class WorkspaceUncheckableError(Exception):
    """The workspace has more entries than the scan may look at."""


def multiply_linked(root: str, *, max_entries: int) -> list[str]:
    """Paths (relative to ``root``) of regular files with more than one link, at most a few."""
    found: list[str] = []
    seen = 0
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            entries = list(os.scandir(os.path.join(root, relative) if relative else root))
        except (FileNotFoundError, NotADirectoryError):
            continue  # removed or replaced while walking: nothing there to read
        for entry in entries:
            seen += 1
            if seen > max_entries:
                raise WorkspaceUncheckableError(
                    f"the workspace holds more than {max_entries} entries, too many to check "
                    "for hard links"
                )
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            path = f"{relative}/{entry.name}" if relative else entry.name
            if stat.S_ISDIR(info.st_mode):
                pending.append(path)
            elif stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                found.append(path)
                if len(found) >= SHOWN_MAX:
                    return found
    return found
