"""Regular files with more than one hard link in a workspace.

A hard link names an inode, not a place: a link planted in a workspace may be
another agent's file or one of the host's, and its path proves nothing. The file
tools refuse such files (``fs_runner.require_regular``); a program started in the
workspace would read them all the same, so ``shell_command`` and ``code_runner``
look for them first and refuse to start while any is there. Both refuse: the rule is the same.

The walk never follows symlinks; it stops after ``max_entries`` entries, and a
workspace too large to check is refused rather than trusted.
"""

from __future__ import annotations

import os
import stat
from typing import Final

from tools_app.builtin.base import RefusalCode, ToolRefusedError

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


def refuse_hard_links(workspace: os.PathLike[str] | str, *, max_entries: int) -> None:
    """Refuse to start a program while the workspace holds a file with several hard links.

    read_file refuses such a file (its path proves nothing about what it is); a
    program would read it all the same, so none starts while one is there.
    """
    try:
        linked = multiply_linked(os.path.realpath(workspace), max_entries=max_entries)
    except WorkspaceUncheckableError as exc:
        raise ToolRefusedError(RefusalCode.LIMIT_EXCEEDED, f"{exc}; nothing was run") from None
    if linked:
        names = ", ".join(repr(name) for name in linked)
        raise ToolRefusedError(
            RefusalCode.PATH_NOT_REACHABLE,
            f"the workspace holds files with more than one hard link ({names}); a hard link "
            "can name a file outside the workspace, so no program runs while one is there "
            "(the file tools refuse them too): remove them with delete_file",
        )
