"""The file a write or edit would change, read for its diff without trusting the workspace.

The agent controls its workspace, so the read is defensive: the path goes
through the file tools' own checks (workspace only, never the credentials
floor), every component is opened with ``O_NOFOLLOW`` from the workspace's
directory descriptor (a symlink is reported, never followed), only a regular
file with one link is read, and never more than the configured size.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from typing import Any

from approvals_app.cards.model import CurrentFile, FileTarget, TargetKind
from approvals_app.cards.text import byte_label
from tools_app.builtin.base import ToolRefusedError
from tools_app.builtin.file_system.paths import PathRules, check_agent_path, workspace_roots

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO in the workspace must not hold the page up.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def _unreadable(reason: str) -> CurrentFile:
    return CurrentFile("unreadable", reason=reason)


def _read_regular(fd: int, max_bytes: int) -> CurrentFile:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return _unreadable("it is not a regular file")
    if info.st_nlink > 1:
        return _unreadable("it has several hard links, so its path proves nothing about it")
    if info.st_size > max_bytes:
        return _unreadable(
            f"it is {byte_label(info.st_size)}, over the {byte_label(max_bytes)} shown"
        )
    data = os.read(fd, max_bytes + 1)
    if len(data) > max_bytes:
        return _unreadable(f"it is over the {byte_label(max_bytes)} shown")
    try:
        return CurrentFile("read", text=data.decode("utf-8"), size=len(data))
    except UnicodeDecodeError:
        return _unreadable("it is not UTF-8 text")


def read_current_file(workspace: str, raw_path: Any, *, max_bytes: int) -> CurrentFile:
    """The file at ``raw_path`` in ``workspace`` as it is now, ``missing``, or why not read."""
    return _open_then(workspace, raw_path, lambda fd: _read_regular(fd, max_bytes))


def current_file_size(workspace: str, raw_path: Any) -> CurrentFile:
    """Whether the file at ``raw_path`` exists now, and its size, without reading it
    (``read`` with ``size`` and no text; ``missing``; or ``unreadable`` and why)."""

    def size_of(fd: int) -> CurrentFile:
        return CurrentFile("read", size=os.fstat(fd).st_size)

    return _open_then(workspace, raw_path, size_of)


def _kind_of(mode: int) -> TargetKind:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "link"
    return "special"


def file_target(workspace: str, raw_path: Any) -> FileTarget:
    """What is at ``raw_path`` in ``workspace`` now: a regular file and its size, a
    directory, a symbolic link (its target as written, never followed), or nothing.

    The parent directories are opened one by one without following links and the last
    component is looked at with ``lstat`` from its parent: nothing is read or changed.
    """
    try:
        checked = check_agent_path(raw_path, PathRules(workspace_roots=workspace_roots(workspace)))
    except ToolRefusedError as exc:
        return FileTarget("unreadable", reason=exc.reason)
    if checked.anchor != "workspace" or checked.is_anchor:
        return FileTarget("unreadable", reason="it is not a path inside the workspace")
    fds: list[int] = []
    try:
        fds.append(os.open(os.path.realpath(workspace), _DIR_FLAGS))
        for part in checked.parts[:-1]:
            fds.append(os.open(part, _DIR_FLAGS, dir_fd=fds[-1]))
        name = checked.parts[-1]
        info = os.stat(name, dir_fd=fds[-1], follow_symlinks=False)
        kind = _kind_of(info.st_mode)
        link_to = os.readlink(name, dir_fd=fds[-1]) if kind == "link" else ""
        size = info.st_size if kind == "file" else 0
        return FileTarget(kind, size=size, links=info.st_nlink, link_to=link_to)
    except FileNotFoundError:
        return FileTarget("missing")
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return FileTarget(
                "unreadable",
                reason="a directory on its path is a symbolic link or not a directory; "
                "not followed",
            )
        return FileTarget("unreadable", reason=exc.strerror or "it could not be looked at")
    finally:
        for fd in fds:
            os.close(fd)


def _open_then(workspace: str, raw_path: Any, then: Callable[[int], CurrentFile]) -> CurrentFile:
    try:
        checked = check_agent_path(raw_path, PathRules(workspace_roots=workspace_roots(workspace)))
    except ToolRefusedError as exc:
        return _unreadable(exc.reason)
    if checked.anchor != "workspace" or checked.is_anchor:
        return _unreadable("it is not a file inside the workspace")
    fds: list[int] = []
    try:
        fds.append(os.open(os.path.realpath(workspace), _DIR_FLAGS))
        for part in checked.parts[:-1]:
            fds.append(os.open(part, _DIR_FLAGS, dir_fd=fds[-1]))
        fds.append(os.open(checked.parts[-1], _FILE_FLAGS, dir_fd=fds[-1]))
        return then(fds[-1])
    except FileNotFoundError:
        return CurrentFile("missing")
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return _unreadable(
                "a part of its path is a symbolic link or not a directory; not followed"
            )
        return _unreadable(exc.strerror or "it could not be opened")
    finally:
        for fd in fds:
            os.close(fd)
