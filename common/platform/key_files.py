"""Key files under ``var/``: written privately (0600) and atomically, read back as lines.

Pure: no Django imports. Used by the secrets broker's and the audit log's key files
(``secrets_app.keys``, ``audit_app.keys``), which decide where the file lives and
what a line holds.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

KEY_FILE_MODE = 0o600


def write_key_lines(path: Path, lines: list[str], *, exclusive: bool) -> None:
    """Write ``lines`` to the key file privately and atomically.

    A temporary file (mode 0600, named for this process and thread) is written in full,
    then linked into place when ``exclusive`` (an existing file wins, so two processes
    starting at once agree on one key) or renamed over the old file otherwise.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, KEY_FILE_MODE)
    with os.fdopen(fd, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    try:
        if exclusive:
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
        else:
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def read_key_lines(path: Path) -> list[str]:
    """The key file's lines, as written by ``write_key_lines``."""
    return path.read_text().splitlines()


def ensure_key_file(path: Path, first_lines: Callable[[], list[str]]) -> None:
    """Create the key file with ``first_lines()`` unless it exists (first writer wins)."""
    if not path.exists():
        write_key_lines(path, first_lines(), exclusive=True)
