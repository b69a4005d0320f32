"""File-system scope checks for path arguments.

A path is inside its scope only if every reading of it is: the raw string, its
percent-decoded form (decoded until stable, so ``%252e%252e`` is caught), and
both with backslashes read as separators. Relative paths are taken from the
agent's workspace; absolute paths must themselves lie inside the scope. When a
resolver is given (``os.path.realpath`` in production), symlinks are followed
and the real target must stay inside the real scope root.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import Final
from urllib.parse import unquote

PathResolver = Callable[[str], str]
"""Maps an absolute path to its real path (symlinks followed)."""

_MAX_DECODE_ROUNDS: Final = 4
_CONTROL_RE: Final = re.compile(r"[\x00-\x1f\x7f]")


def _decoded(value: str) -> str:
    if "%" not in value:
        return value
    text = value
    for _ in range(_MAX_DECODE_ROUNDS):
        decoded = unquote(text)
        if decoded == text:
            return text
        text = decoded
    # Still changing after several rounds: treat as hostile rather than guess.
    return "\x00"


def _inside(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root + "/")


def _readings(value: str) -> set[str] | tuple[str]:
    if "%" not in value and "\\" not in value:
        return (value,)
    decoded = _decoded(value)
    return {value, decoded, value.replace("\\", "/"), decoded.replace("\\", "/")}


def check_path_characters(value: object) -> str | None:
    """Why ``value`` is unusable as a path whatever the scope, or None if it is fine."""
    if not isinstance(value, str):
        return "must be a string path"
    decoded = _decoded(value)
    if _CONTROL_RE.search(value) or _CONTROL_RE.search(decoded):
        return "contains a NUL or control character, or is percent-encoded too many times"
    if value.startswith("~") or decoded.startswith("~"):
        return "home-directory paths ('~') are not allowed; use a path in the workspace"
    return None


def check_path_scope(
    value: str,
    *,
    base: str,
    roots: tuple[str, ...],
    resolver: PathResolver | None,
) -> str | None:
    """Why ``value`` escapes ``roots`` (relative to ``base``), or None if it stays inside.

    ``roots`` must be normalised absolute paths (``AgentPolicy`` stores them so).
    """
    clean_roots = roots
    real_roots = tuple(resolver(r) for r in clean_roots) if resolver else ()
    for reading in _readings(value):
        joined = reading if reading.startswith("/") else posixpath.join(base, reading)
        full = posixpath.normpath(joined)
        # normpath keeps a leading '//' (POSIX allows it to mean something else).
        if full.startswith("//"):
            full = "/" + full.lstrip("/")
        if not any(_inside(full, root) for root in clean_roots):
            kind = "absolute path" if reading.startswith("/") else "path"
            return f"{kind} {reading!r} resolves to {full!r}, outside {', '.join(clean_roots)}"
        if resolver is not None:
            real = resolver(full)
            if not any(_inside(real, root) for root in real_roots):
                return (
                    f"path {reading!r} follows a symlink to {real!r}, outside "
                    f"{', '.join(clean_roots)}"
                )
    return None
