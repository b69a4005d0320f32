"""Runs inside the sandbox: keep one picture in the workspace, as the sandbox's user.

Usage: ``python3 -I -S -c SOURCE REQUEST-JSON`` with the picture's bytes on stdin.
The request names the folder (under the workspace), the file's extension and the
SHA-256 the worker computed; the bytes read here must have that digest. Every
folder on the way is made here and must be a plain directory (a link planted by the
agent's programs is refused), and the file is created new, never through a link.

The answer is one JSON line: ``{"ok": true, "path", "sha256", "bytes"}`` or
``{"ok": false, "code", "message"}``. Standard library only.
"""

import contextlib
import errno
import hashlib
import json
import os
import stat
import sys
import time

WORKSPACE = "/workspace"
FOLDERS = (".synthorg/images", ".synthorg/mockups")
EXTENSIONS = ("png", "jpg", "webp")


class Failure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def folder(relative):
    path = WORKSPACE
    for part in relative.split("/"):
        path = os.path.join(path, part)
        try:
            os.mkdir(path, 0o755)
        except FileExistsError:
            pass
        except OSError as exc:
            raise Failure("WORKSPACE_NOT_WRITABLE", f"cannot make {path}: {exc.strerror}") from None
        if os.path.islink(path) or not os.path.isdir(path):
            raise Failure("PATH_NOT_REACHABLE", f"{path} is not a plain directory")
    return path


def same(path, digest):
    """The file already at ``path`` is a regular file with ``digest``, else refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise Failure("PATH_NOT_REACHABLE", f"{path} is in the way: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
        if not regular or hashlib.sha256(handle.read()).hexdigest() != digest:
            raise Failure("PATH_NOT_REACHABLE", f"{path} is in the way")


def write_whole(fd, path, data):
    """Write ``data`` to the new file ``fd``; a file the workspace quota (the call's file
    size limit) cannot hold is removed, never left cut short."""
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(path)
        if exc.errno in (errno.EFBIG, errno.ENOSPC, errno.EDQUOT):
            raise Failure(
                "LIMIT_EXCEEDED",
                f"the picture ({len(data)} bytes) does not fit in what the workspace quota "
                "(sandboxing.workspace_quota) has left; delete files to make room",
            ) from None
        raise Failure("WORKSPACE_NOT_WRITABLE", f"cannot write {path}: {exc.strerror}") from None


def store(request, data):
    if request["folder"] not in FOLDERS or request["extension"] not in EXTENSIONS:
        raise Failure("INVALID_ARGUMENT", "unknown folder or extension")
    digest = hashlib.sha256(data).hexdigest()
    if digest != request["sha256"]:
        raise Failure("STORE_FAILED", "the picture changed on its way into the sandbox")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    name = f"{stamp}-{digest[:12]}.{request['extension']}"
    path = os.path.join(folder(request["folder"]), name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        fd = None  # the same picture in the same second: it must be there as a plain file
        same(path, digest)
    except OSError as exc:
        raise Failure("WORKSPACE_NOT_WRITABLE", f"cannot write {path}: {exc.strerror}") from None
    if fd is not None:
        write_whole(fd, path, data)
    return {"path": os.path.relpath(path, WORKSPACE), "sha256": digest, "bytes": len(data)}


def main():
    request = json.loads(sys.argv[1])
    try:
        answer = dict(store(request, sys.stdin.buffer.read()), ok=True)
    except Failure as exc:
        answer = {"ok": False, "code": exc.code, "message": exc.message}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
