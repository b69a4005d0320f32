"""PURE: a desktop screenshot read back from the workspace, as the agent will be told of it.

The session (the agent's own programs share it) writes the file; the worker reads it
through directory descriptors without following links, as a regular file, and
describes the bytes it read: their digest and the PNG header's size.
"""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path
from typing import Final

from tools_app.builtin.base import ToolFailedError

SCREENSHOT_MAX_BYTES: Final = 64 * 1024 * 1024
PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"


def read_screenshot(workspace: Path, relative: str) -> bytes:
    """The picture's bytes, from a regular file inside the workspace reached without links."""
    root = os.path.realpath(workspace)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in relative.split("/")[:-1]:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        try:
            # O_NONBLOCK: a FIFO planted in the file's place must not hold the reader.
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
            file_fd = os.open(relative.rsplit("/", 1)[-1], flags, dir_fd=fd)
        except OSError as exc:
            raise ToolFailedError(f"the screenshot cannot be read: {exc.strerror}",
                                  code="DESKTOP_FAILED") from exc  # fmt: skip
    except OSError as exc:
        raise ToolFailedError(
            f"the screenshot folder cannot be read: {exc.strerror}", code="DESKTOP_FAILED"
        ) from exc
    finally:
        os.close(fd)
    with os.fdopen(file_fd, "rb") as picture:
        if not stat.S_ISREG(os.fstat(picture.fileno()).st_mode):
            raise ToolFailedError("the screenshot is not a file", code="DESKTOP_FAILED")
        data = picture.read(SCREENSHOT_MAX_BYTES + 1)
    if len(data) > SCREENSHOT_MAX_BYTES:
        raise ToolFailedError("the screenshot is too large", code="DESKTOP_FAILED")
    return data


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's header."""
    if len(data) < 24 or not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        raise ToolFailedError("the screenshot is not a PNG", code="DESKTOP_FAILED")
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)
