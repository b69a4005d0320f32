"""The workspace files a command's arguments name, looked at before it runs.

A word names a file when it looks like a path (a ``/``, a dot, ``~``) or when
something of that name is in the working directory; an option's value
(``--out=report.txt``) counts. Each is walked from the workspace's directory
descriptor one component at a time, ``O_NOFOLLOW``: a symbolic link is reported
with what it points to and never followed, a ``..`` that climbs above the workspace
and an absolute path elsewhere are reported as outside and not looked at. Nothing is
opened for reading or writing.
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from approvals_app.cards.text import byte_label, middle_cut

NamedKind = Literal["file", "directory", "link", "special", "missing", "outside", "unreadable"]

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_URL: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# Words looked at, and named files reported: a command of 1,024 words stays cheap.
MAX_WORDS: Final = 64
MAX_NAMED: Final = 20
_SHOWN_CHARS: Final = 120


@dataclass(frozen=True, slots=True)
class NamedFile:
    """What one word of a command names now (``reason``: why it was not looked at)."""

    word: str
    kind: NamedKind
    size: int = 0
    link_to: str = ""
    link_outside: bool = False
    reason: str = ""


def _value_of(word: str) -> str:
    """The part of ``word`` that may be a path: an option's value, or the word itself
    ("" for a bare option)."""
    if word.startswith("-"):
        _, sep, value = word.partition("=")
        return value if sep else ""
    return word


def _looks_like_path(word: str) -> bool:
    return "/" in word or "." in word or word.startswith("~")


def _inside(workspace_roots: Sequence[str], absolute: str) -> tuple[str, ...] | None:
    """The parts of ``absolute`` below the workspace, or None when it is elsewhere."""
    normal = posixpath.normpath(absolute)
    for root in workspace_roots:
        if normal == root:
            return ()
        if normal.startswith(root.rstrip("/") + "/"):
            return tuple(normal[len(root.rstrip("/")) + 1 :].split("/"))
    return None


def _points_outside(workspace_roots: Sequence[str], where: Sequence[str], link_to: str) -> bool:
    """Whether a link at ``where`` (parts below the workspace) leads out of it, read
    lexically (a link further on may lead out too: none is followed, so none is read)."""
    if link_to.startswith("/"):
        return _inside(workspace_roots, link_to) is None
    depth = len(where) - 1
    for part in link_to.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def _kind_of(mode: int) -> NamedKind:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "link"
    return "special"


def _walk(word: str, roots: Sequence[str], parts: Sequence[str]) -> NamedFile:
    fds: list[int] = []
    where: list[str] = []
    try:
        fds.append(os.open(roots[-1], _DIR_FLAGS))
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            if part in ("", "."):
                continue
            if part == "..":
                if not where:
                    return NamedFile(word, "outside", reason="it climbs out of the workspace")
                os.close(fds.pop())
                where.pop()
                continue
            if last:
                info = os.stat(part, dir_fd=fds[-1], follow_symlinks=False)
                kind = _kind_of(info.st_mode)
                if kind != "link":
                    return NamedFile(word, kind, size=info.st_size if kind == "file" else 0)
                link_to = os.readlink(part, dir_fd=fds[-1])
                outside = _points_outside(roots, [*where, part], link_to)
                return NamedFile(word, "link", link_to=link_to, link_outside=outside)
            try:
                fds.append(os.open(part, _DIR_FLAGS, dir_fd=fds[-1]))
            except OSError as exc:
                # O_NOFOLLOW with O_DIRECTORY answers ELOOP or ENOTDIR for a link.
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                info = os.stat(part, dir_fd=fds[-1], follow_symlinks=False)
                if not stat.S_ISLNK(info.st_mode):
                    raise
                link_to = os.readlink(part, dir_fd=fds[-1])
                outside = _points_outside(roots, [*where, part], link_to)
                return NamedFile(
                    word,
                    "unreadable",
                    link_to=link_to,
                    link_outside=outside,
                    reason=f"{'/'.join([*where, part])} on its path is a symbolic link",
                )
            where.append(part)
        # The word names a directory on the walk (``.``, ``sub/``, ``sub/..``).
        return NamedFile(word, "directory")
    except FileNotFoundError:
        return NamedFile(word, "missing")
    except NotADirectoryError:
        return NamedFile(word, "missing", reason="a part of its path is not a directory")
    except OSError as exc:
        return NamedFile(word, "unreadable", reason=exc.strerror or "it could not be looked at")
    finally:
        for fd in fds:
            os.close(fd)


def named_file(workspace_roots: Sequence[str], cwd: Sequence[str], word: str) -> NamedFile:
    """What ``word`` names, read from the working directory ``cwd`` (parts below the
    workspace; ``workspace_roots``: the workspace as given and as resolved, the last
    one opened)."""
    if word.startswith("~"):
        return NamedFile(word, "outside", reason="a home directory is outside the workspace")
    if word.startswith("/"):
        below = _inside(workspace_roots, word)
        if below is None:
            return NamedFile(word, "outside", reason="an absolute path outside the workspace")
        return _walk(word, workspace_roots, below)
    return _walk(word, workspace_roots, [*cwd, *word.split("/")])


def command_files(
    workspace_roots: Sequence[str], cwd: Sequence[str], words: Sequence[str]
) -> tuple[tuple[NamedFile, ...], int]:
    """The files ``words`` name (the program itself excluded by the caller), at most
    ``MAX_NAMED``, and how many more words were left unread."""
    found: list[NamedFile] = []
    seen: set[str] = set()
    values = [v for v in (_value_of(w) for w in words) if v and not _URL.match(v)]
    looked = 0
    for value in values:
        if value in seen:
            continue
        if looked >= MAX_WORDS or len(found) >= MAX_NAMED:
            break
        seen.add(value)
        looked += 1
        named = named_file(workspace_roots, cwd, value)
        if named.kind == "missing" and not _looks_like_path(value):
            continue  # a plain word (``hello``, ``main``): nothing of that name is here
        found.append(named)
    left = len({v for v in values} - seen)
    return tuple(found), left


def _shown(word: str) -> str:
    head, tail, cut = middle_cut(word, _SHOWN_CHARS)
    return f"{head}…({cut} characters)…{tail}" if cut else word


def _describe(named: NamedFile) -> str:
    if named.kind == "file":
        return f"a regular file of {byte_label(named.size)}"
    if named.kind == "directory":
        return "a directory"
    if named.kind == "missing":
        return "does not exist now" + (f" ({named.reason})" if named.reason else "")
    if named.kind == "outside":
        return f"OUTSIDE the workspace ({named.reason}); not looked at"
    if named.kind == "special":
        return "not a regular file (a device, socket or pipe)"
    where = " that points OUTSIDE the workspace" if named.link_outside else ""
    if named.kind == "link":
        return f"a symbolic link to {named.link_to!r}{where} (not followed)"
    if named.link_to:
        return f"{named.reason} to {named.link_to!r}{where} (not followed)"
    return f"not looked at: {named.reason}"


def command_files_text(found: Sequence[NamedFile], left: int) -> str:
    """The line a person reads: each named file and what it is now."""
    if not found:
        return "no argument names a file in the workspace"
    listed = "; ".join(f"{_shown(n.word)}: {_describe(n)}" for n in found)
    more = f"; {left} more argument(s) not looked at" if left else ""
    return f"files named in its arguments: {listed}{more}"
