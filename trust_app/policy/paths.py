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


def normal_path(reading: str, *, base: str) -> str:
    """``reading`` as the absolute, lexically normalised path the scope check sees."""
    joined = reading if reading.startswith("/") else posixpath.join(base, reading)
    full = posixpath.normpath(joined)
    # normpath keeps a leading '//' (POSIX allows it to mean something else).
    if full.startswith("//"):
        full = "/" + full.lstrip("/")
    return full


def path_readings(value: str, *, roots: tuple[str, ...]) -> frozenset[str]:
    """Every way ``value`` may be read, normalised as the scope check reads it.

    A reading inside one of ``roots`` is given relative to that root (``.`` for the
    root itself), so ``notes/../x``, ``./x`` and ``<root>/x`` all read ``x``; a
    reading outside every root stays absolute. Rules and grants written over
    workspace paths are matched against these readings. Call
    ``check_path_characters`` first: a value it refuses has no reading.
    """
    roots = tuple(r for r in roots if r != "/")
    found: set[str] = set()
    for reading in _readings(value):
        if reading.startswith("/"):
            full = normal_path(reading, base="/")
        elif roots:
            full = normal_path(reading, base=roots[0])
        else:
            found.add(posixpath.normpath(reading))
            continue
        root = next((r for r in roots if _inside(full, r)), None)
        found.add(posixpath.relpath(full, root) if root is not None else full)
    return frozenset(found)


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
    try:
        real_roots = tuple(resolver(r) for r in clean_roots) if resolver else ()
    except OSError as exc:
        return f"the workspace cannot be resolved ({exc.strerror or exc}); ask an admin"
    for reading in _readings(value):
        full = normal_path(reading, base=base)
        if not any(_inside(full, root) for root in clean_roots):
            kind = "absolute path" if reading.startswith("/") else "path"
            return f"{kind} {reading!r} resolves to {full!r}, outside {', '.join(clean_roots)}"
        if resolver is not None:
            try:
                real = resolver(full)
            except OSError as exc:
                # A component changed (directory ↔ symlink) while it was being resolved:
                # what it points to cannot be judged, so the path is refused.
                return (
                    f"path {reading!r} cannot be resolved ({exc.strerror or exc}); a part of it "
                    "changed while it was being checked, call again once it is stable"
                )
            if not any(_inside(real, root) for root in real_roots):
                return (
                    f"path {reading!r} follows a symlink to {real!r}, outside "
                    f"{', '.join(clean_roots)}"
                )
    return None
