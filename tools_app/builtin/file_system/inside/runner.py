"""The program that does a file operation inside the sandbox: standard library only.

The worker checks the path first (``fs_paths``); this program does the work as
the sandbox's unprivileged user and checks again where it matters, against
what is really on disk. It reads one JSON request per line on stdin and writes
one JSON answer per line on stdout, until the end of its input.

How it reaches the sandbox: its source is passed with ``python3 -I -S -c``, so
nothing on the host has to be visible inside a namespace or a container; only
a ``python3`` on the sandbox's PATH is needed. The workspace is the working
directory the sandbox gives the process (``/workspace`` inside namespaces and
containers, the host path for the subprocess backend).

Every path component is opened relative to its parent's descriptor with
``O_NOFOLLOW``: the kernel is never asked to follow a symlink. Symlinks are
followed here, by hand, one hop at a time: the target is spliced into the
remaining components, ``..`` moves to a parent descriptor already held, and a
step above the anchor, an absolute target, or more than ``MAX_SYMLINK_HOPS``
hops is refused. A symlink swapped in between the worker's check and this
program's use therefore cannot carry an operation out of the workspace.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import json
import os
import stat
import sys
from fnmatch import fnmatchcase
from typing import Any

MAX_SYMLINK_HOPS = 40
BINARY_SNIFF_BYTES = 8192
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class RunnerRefusal(Exception):
    """The operation is refused or failed; ``code`` is what the worker maps it to."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def floor_match(parts: list[str] | tuple[str, ...], anchor: str, patterns: list[str]) -> str | None:
    """The always-deny pattern ``parts`` falls under, or None.

    A pattern is a ``/``-separated run of glob components, compared without
    case. A leading ``/`` anchors it at the file-system root (it then applies
    only to root-anchored paths); otherwise it matches anywhere in the path.
    A match on a directory covers everything below it.
    """
    lowered = [p.lower() for p in parts]
    for pattern in patterns:
        seq = [s for s in pattern.lower().split("/") if s]
        if not seq:
            continue
        if pattern.startswith("/"):
            starts = [0] if anchor == "root" else []
        else:
            starts = list(range(len(lowered) - len(seq) + 1))
        for start in starts:
            window = lowered[start : start + len(seq)]
            if len(window) == len(seq) and all(map(fnmatchcase, window, seq)):
                return pattern
    return None


def file_type(mode: int) -> str:
    """A word for the kind of file ``mode`` describes."""
    for test, name in (
        (stat.S_ISREG, "file"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISLNK, "symlink"),
        (stat.S_ISFIFO, "fifo"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "char_device"),
        (stat.S_ISBLK, "block_device"),
    ):
        if test(mode):
            return name
    return "unknown"


class Walk:
    """Descriptors of the directories from the anchor down to the current one."""

    def __init__(self, anchor_fd: int, anchor: str, floor: list[str]) -> None:
        self.fds = [anchor_fd]
        self.names: list[str] = []
        self.anchor = anchor
        self.floor = floor

    @property
    def fd(self) -> int:
        return self.fds[-1]

    def shown(self, name: str = "") -> str:
        joined = "/".join([*self.names, name] if name else self.names)
        return ("/" + joined) if self.anchor == "root" else (joined or ".")

    def check_floor(self, name: str) -> None:
        hit = floor_match([*self.names, name], self.anchor, self.floor)
        if hit is not None:
            raise RunnerRefusal(
                "PATH_NOT_REACHABLE",
                f"{self.shown(name)!r} is under the always-denied path {hit!r} "
                "(credentials and system secrets are never reachable)",
            )

    def enter(self, name: str, st: os.stat_result) -> None:
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise RunnerRefusal(
                    "PATH_NOT_REACHABLE",
                    f"{self.shown(name)!r} changed into a symlink or non-directory while "
                    "being opened; try again",
                ) from None
            raise
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)
            raise RunnerRefusal(
                "PATH_NOT_REACHABLE", f"{self.shown(name)!r} was replaced while being opened"
            )
        self.fds.append(fd)
        self.names.append(name)

    def leave(self, through: str) -> None:
        if not self.names:
            raise RunnerRefusal(
                "PATH_NOT_REACHABLE",
                f"the symlink {through!r} points above the "
                f"{'workspace' if self.anchor == 'workspace' else 'root'}",
            )
        os.close(self.fds.pop())
        self.names.pop()

    def close(self) -> None:
        for fd in self.fds[1:]:
            os.close(fd)
        self.fds = self.fds[:1]
        self.names = []


def resolve(
    walk: Walk, parts: list[str], *, follow_last: bool, create_parents: bool = False
) -> tuple[str, os.stat_result | None]:
    """Walk to the last component; return its name (in ``walk.fd``) and lstat, or None.

    Symlinks in every position but the last are followed by hand; the last one
    only when ``follow_last``. Missing intermediate directories are created
    when ``create_parents``, else refused.
    """
    pending = list(parts)
    hops = 0
    link_name = ""
    if not pending:
        raise RunnerRefusal("INVALID_ARGUMENT", "the path names the anchor itself")
    while pending:
        name = pending.pop(0)
        if name in ("", "."):
            if not pending:
                raise RunnerRefusal(
                    "PATH_NOT_REACHABLE", f"the symlink {link_name!r} points at a directory"
                )
            continue
        if name == "..":
            walk.leave(link_name)
            if not pending:
                raise RunnerRefusal(
                    "PATH_NOT_REACHABLE", f"the symlink {link_name!r} points at a parent"
                )
            continue
        last = not pending
        walk.check_floor(name)
        try:
            st: os.stat_result | None = os.stat(name, dir_fd=walk.fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is None:
            if last:
                return name, None
            if not create_parents:
                raise RunnerRefusal("NOT_FOUND", f"{walk.shown(name)!r} does not exist")
            os.mkdir(name, 0o775, dir_fd=walk.fd)
            st = os.stat(name, dir_fd=walk.fd, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode) and (follow_last or not last):
            hops += 1
            if hops > MAX_SYMLINK_HOPS:
                raise RunnerRefusal(
                    "PATH_NOT_REACHABLE",
                    f"more than {MAX_SYMLINK_HOPS} symlinks on the way (a symlink loop?)",
                )
            target = os.readlink(name, dir_fd=walk.fd)
            link_name = walk.shown(name)
            if target.startswith("/"):
                raise RunnerRefusal(
                    "PATH_NOT_REACHABLE",
                    f"the symlink {link_name!r} has an absolute target; only relative symlinks "
                    "that stay inside are followed",
                )
            pending = target.split("/") + pending
            continue
        if last:
            return name, st
        if not stat.S_ISDIR(st.st_mode):
            raise RunnerRefusal("NOT_FOUND", f"{walk.shown(name)!r} is not a directory")
        walk.enter(name, st)
    raise RunnerRefusal("INVALID_ARGUMENT", "empty path")  # pragma: no cover - loop returns


def require_regular(walk: Walk, name: str, st: os.stat_result | None) -> os.stat_result:
    """Refuse anything but an existing regular file with a single link."""
    if st is None:
        raise RunnerRefusal("NOT_FOUND", f"{walk.shown(name)!r} does not exist")
    kind = file_type(st.st_mode)
    if kind == "directory":
        raise RunnerRefusal("INVALID_ARGUMENT", f"{walk.shown(name)!r} is a directory")
    if kind != "file":
        raise RunnerRefusal(
            "PATH_NOT_REACHABLE",
            f"{walk.shown(name)!r} is a {kind.replace('_', ' ')}; only regular files are read "
            "or written",
        )
    if st.st_nlink > 1:
        # A hard link can name a file outside the workspace; its path proves nothing.
        raise RunnerRefusal(
            "PATH_NOT_REACHABLE",
            f"{walk.shown(name)!r} has {st.st_nlink} hard links; files with more than one "
            "link are not read",
        )
    return st


def open_regular(walk: Walk, name: str, st: os.stat_result) -> int:
    """Open the file checked as ``st`` without following links and confirm it is the same."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=walk.fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RunnerRefusal(
                "PATH_NOT_REACHABLE", f"{walk.shown(name)!r} became a symlink while being opened"
            ) from None
        raise
    now = os.fstat(fd)
    if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise RunnerRefusal(
            "PATH_NOT_REACHABLE", f"{walk.shown(name)!r} was replaced while being opened"
        )
    return fd


def read_all(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes from ``fd``'s current position."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def atomic_replace(walk: Walk, name: str, data: bytes, mode: int) -> None:
    """Write ``data`` to a new file beside ``name`` and rename it over ``name``.

    The rename replaces the directory entry itself, so a symlink or a hard
    link in its place is replaced, never written through.
    """
    # os.urandom rather than the secrets module: importing secrets costs a few
    # milliseconds on every call, and this program runs once per file operation.
    temp = f".synthorg-{os.urandom(8).hex()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o600, dir_fd=walk.fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.rename(temp, name, src_dir_fd=walk.fd, dst_dir_fd=walk.fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=walk.fd)
        raise


def is_binary(sample: bytes) -> bool:
    """NUL bytes or bytes that are not UTF-8 mark a file as binary."""
    if b"\x00" in sample:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
    except UnicodeDecodeError:
        return True
    return False


def op_read(walk: Walk, req: dict[str, Any]) -> dict[str, Any]:
    name, st = resolve(walk, req["parts"], follow_last=True)
    st = require_regular(walk, name, st)
    fd = open_regular(walk, name, st)
    try:
        size = os.fstat(fd).st_size
        offset = min(int(req.get("offset", 0)), size)
        os.lseek(fd, offset, os.SEEK_SET)
        sniff = read_all(fd, BINARY_SNIFF_BYTES)
        if is_binary(sniff.lstrip(bytes(range(0x80, 0xC0)))[:BINARY_SNIFF_BYTES]):
            return {"binary": True, "size": size, "offset": offset, "content": ""}
        os.lseek(fd, offset, os.SEEK_SET)
        wanted = int(req["length"])
        data = read_all(fd, wanted)
    finally:
        os.close(fd)
    # Start and end on character boundaries: skip continuation bytes at the
    # start, keep an incomplete character at the end for the next read.
    skip = 0
    while skip < min(3, len(data)) and 0x80 <= data[skip] < 0xC0:
        skip += 1
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(data[skip:], final=False)
    except UnicodeDecodeError:
        return {"binary": True, "size": size, "offset": offset, "content": ""}
    used = len(data) - len(decoder.getstate()[0])
    end = offset + used
    return {
        "binary": False,
        "content": text,
        "size": size,
        "offset": offset + skip,
        "bytes_read": used - skip,
        "next_offset": end if end < size else None,
    }


def op_write(walk: Walk, req: dict[str, Any]) -> dict[str, Any]:
    name, st = resolve(
        walk, req["parts"], follow_last=True, create_parents=bool(req.get("create_parents"))
    )
    mode = 0o664
    created = st is None
    if st is not None:
        kind = file_type(st.st_mode)
        if kind != "file":
            code = "INVALID_ARGUMENT" if kind == "directory" else "PATH_NOT_REACHABLE"
            raise RunnerRefusal(code, f"{walk.shown(name)!r} is a {kind.replace('_', ' ')}")
        if not req.get("overwrite", True):
            raise RunnerRefusal("ALREADY_EXISTS", f"{walk.shown(name)!r} already exists")
        mode = stat.S_IMODE(st.st_mode)
    data = req["content"].encode("utf-8")
    atomic_replace(walk, name, data, mode)
    return {"bytes_written": len(data), "created": created}


def op_edit(walk: Walk, req: dict[str, Any]) -> dict[str, Any]:
    name, st = resolve(walk, req["parts"], follow_last=True)
    st = require_regular(walk, name, st)
    if st.st_size > int(req["max_bytes"]):
        raise RunnerRefusal(
            "LIMIT_EXCEEDED",
            f"{walk.shown(name)!r} is {st.st_size} bytes; edits are limited to "
            f"{req['max_bytes']} bytes",
        )
    fd = open_regular(walk, name, st)
    try:
        data = read_all(fd, int(req["max_bytes"]) + 1)
    finally:
        os.close(fd)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RunnerRefusal("BINARY_FILE", f"{walk.shown(name)!r} is not UTF-8 text") from None
    old, new, expected = req["old_string"], req["new_string"], int(req["expected_replacements"])
    found = text.count(old)
    if found != expected:
        raise RunnerRefusal(
            "MATCH_COUNT_MISMATCH",
            f"found {found} occurrence(s) of old_string in {walk.shown(name)!r}, expected "
            f"{expected}; nothing was changed (add context to old_string or set "
            "expected_replacements)",
        )
    updated = text.replace(old, new).encode("utf-8")
    if len(updated) > int(req["max_bytes"]):
        raise RunnerRefusal(
            "LIMIT_EXCEEDED", f"the edited file would be {len(updated)} bytes, over the limit"
        )
    atomic_replace(walk, name, updated, stat.S_IMODE(st.st_mode))
    return {"replacements": found, "size": len(updated)}


def op_list(walk: Walk, req: dict[str, Any]) -> dict[str, Any]:
    parts = req["parts"]
    if parts:
        name, st = resolve(walk, parts, follow_last=True)
        if st is None:
            raise RunnerRefusal("NOT_FOUND", f"{walk.shown(name)!r} does not exist")
        if not stat.S_ISDIR(st.st_mode):
            raise RunnerRefusal("INVALID_ARGUMENT", f"{walk.shown(name)!r} is not a directory")
        walk.check_floor(name)
        walk.enter(name, st)
    limit = int(req["max_entries"])
    entries: list[dict[str, Any]] = []
    total = hidden = 0
    with os.scandir(walk.fd) as scan:
        names = sorted(entry.name for entry in scan)
    for entry_name in names:
        if floor_match([*walk.names, entry_name], walk.anchor, walk.floor) is not None:
            hidden += 1
            continue
        total += 1
        if len(entries) >= limit:
            continue
        try:
            est = os.stat(entry_name, dir_fd=walk.fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        entries.append({"name": entry_name, "type": file_type(est.st_mode), "size": est.st_size})
    return {"entries": entries, "total": total, "truncated": total > len(entries), "hidden": hidden}


def op_delete(walk: Walk, req: dict[str, Any]) -> dict[str, Any]:
    name, st = resolve(walk, req["parts"], follow_last=False)
    if st is None:
        raise RunnerRefusal("NOT_FOUND", f"{walk.shown(name)!r} does not exist")
    kind = file_type(st.st_mode)
    if kind == "directory":
        if req.get("recursive") is not True:
            raise RunnerRefusal(
                "INVALID_ARGUMENT",
                f"{walk.shown(name)!r} is a directory; pass recursive: true to delete it and "
                "everything in it",
            )
        # shutil.rmtree with dir_fd walks by descriptors and never follows symlinks.
        import shutil  # only deletes need it; importing it costs every call

        shutil.rmtree(name, dir_fd=walk.fd)
    else:
        os.unlink(name, dir_fd=walk.fd)
    return {"deleted": kind}


def op_stat(walk: Walk, req: dict[str, Any]) -> dict[str, Any]:
    parts = req["parts"]
    if parts:
        name, st = resolve(walk, parts, follow_last=False)
        if st is None:
            raise RunnerRefusal("NOT_FOUND", f"{walk.shown(name)!r} does not exist")
    else:
        st = os.fstat(walk.fd)
    return {
        "type": file_type(st.st_mode),
        "size": st.st_size,
        "mode": f"{stat.S_IMODE(st.st_mode):04o}",
        "modified": st.st_mtime,
        "links": st.st_nlink,
    }


OPERATIONS = {
    "read": op_read,
    "write": op_write,
    "edit": op_edit,
    "list": op_list,
    "delete": op_delete,
    "stat": op_stat,
}

_ERRNO_CODES = {
    errno.ENOENT: "NOT_FOUND",
    errno.EACCES: "PERMISSION_DENIED",
    errno.EPERM: "PERMISSION_DENIED",
    errno.EROFS: "READ_ONLY_FILE_SYSTEM",
    errno.ENOSPC: "NO_SPACE",
    errno.EFBIG: "LIMIT_EXCEEDED",
    errno.ENAMETOOLONG: "INVALID_ARGUMENT",
    errno.ELOOP: "PATH_NOT_REACHABLE",
    errno.ENOTEMPTY: "NOT_EMPTY",
}


def check_request(req: object) -> dict[str, Any]:
    """Re-check what the worker already checked; this program trusts nothing."""
    if not isinstance(req, dict) or req.get("op") not in OPERATIONS:
        raise RunnerRefusal("INVALID_ARGUMENT", "unknown operation")
    parts = req.get("parts")
    if not isinstance(parts, list) or not all(
        isinstance(p, str) and p not in ("", ".", "..") and "/" not in p and "\x00" not in p
        for p in parts
    ):
        raise RunnerRefusal("INVALID_ARGUMENT", "malformed path components")
    if req.get("anchor") not in ("workspace", "root"):
        raise RunnerRefusal("INVALID_ARGUMENT", "unknown anchor")
    if not isinstance(req.get("floor"), list):
        raise RunnerRefusal("INVALID_ARGUMENT", "missing always-deny list")
    return req


def serve(raw: bytes) -> dict[str, Any]:
    """Run one request and build the answer."""
    try:
        req = check_request(json.loads(raw.decode("utf-8")))
        anchor_fd = os.open("/" if req["anchor"] == "root" else ".", _DIR_FLAGS)
        walk = Walk(anchor_fd, req["anchor"], [str(p) for p in req["floor"]])
        try:
            hit = floor_match(req["parts"], req["anchor"], walk.floor)
            if hit is not None:
                raise RunnerRefusal(
                    "PATH_NOT_REACHABLE", f"the path is under the always-denied path {hit!r}"
                )
            result = OPERATIONS[req["op"]](walk, req)
        finally:
            walk.close()
            os.close(anchor_fd)
        return {"ok": True, "result": result}
    except RunnerRefusal as exc:
        return {"ok": False, "code": exc.code, "reason": exc.reason}
    except OSError as exc:
        code = _ERRNO_CODES.get(exc.errno or 0, "IO_ERROR")
        return {"ok": False, "code": code, "reason": f"{exc.strerror or exc}"}
    except (ValueError, KeyError, TypeError) as exc:
        return {"ok": False, "code": "INVALID_ARGUMENT", "reason": f"malformed request: {exc}"}


def serve_lines(requests: Any, answers: Any) -> None:
    """Answer each request line with one line, until the end of input.

    A call that starts this program for itself sends one line; a standing runner
    (``sandbox.standing``) is sent one line per call while it stands.
    """
    for line in requests:
        if not line.strip():
            continue
        answers.write(json.dumps(serve(line), ensure_ascii=True) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve_lines(sys.stdin.buffer, sys.stdout)
