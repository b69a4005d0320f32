"""Path rules: the restricted PATH and the working directory inside the workspace.

Prefixes are compared on directory boundaries after normalisation, so
``/usr/bin-evil`` is not under ``/usr/bin`` and ``/usr/bin/../../tmp`` is not
either. Symlinks are resolved before the comparison, so a link cannot carry a
path out of the workspace.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from pathlib import Path

from tools_app.sandbox.errors import SandboxWorkspaceEscapeError

SAFE_PATH_PREFIXES: tuple[str, ...] = (
    "/usr/local/bin",
    "/usr/bin",
    "/bin",
    "/usr/local/sbin",
    "/usr/sbin",
    "/sbin",
)
DEFAULT_SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"


def is_within(path: str, prefix: str) -> bool:
    """True when ``path`` equals ``prefix`` or lies below it, on a directory boundary.

    Both must be absolute; they are normalised lexically (no filesystem access).
    """
    if not os.path.isabs(path) or not os.path.isabs(prefix):
        return False
    norm_path = os.path.normpath(path)
    norm_prefix = os.path.normpath(prefix)
    if norm_prefix == "/":
        return True
    return norm_path == norm_prefix or norm_path.startswith(norm_prefix + os.sep)


def restrict_path(
    candidate: str | None,
    *,
    safe_prefixes: Iterable[str] = SAFE_PATH_PREFIXES,
    default: str = DEFAULT_SANDBOX_PATH,
) -> str:
    """Keep only the ``candidate`` PATH entries that lie inside a safe prefix.

    An entry must be absolute, inside a safe prefix both as written and once its
    symlinks are resolved. Relative entries, ``.`` and empty entries (which mean
    the current directory) are dropped. When nothing survives, ``default``.
    """
    return _restrict_path(candidate, tuple(safe_prefixes), default)


# Resolving symlinks for every entry costs milliseconds per call; the answer
# changes only when root edits system directories, so remember it briefly.
@functools.lru_cache(maxsize=256)
def _restrict_path(candidate: str | None, safe_prefixes: tuple[str, ...], default: str) -> str:
    prefixes = tuple(os.path.normpath(p) for p in safe_prefixes)
    prefixes_real = tuple(os.path.realpath(p) for p in prefixes)
    kept: list[str] = []
    for entry in (candidate or "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        norm = os.path.normpath(entry)
        real = os.path.realpath(norm)
        inside = any(is_within(norm, p) for p in prefixes)
        resolves_inside = any(is_within(real, p) for p in (*prefixes, *prefixes_real))
        if inside and resolves_inside and norm not in kept:
            kept.append(norm)
    return os.pathsep.join(kept) if kept else default


def resolve_workspace(host_path: Path) -> Path:
    """The workspace's real, absolute path; it must exist and be a directory."""
    real = Path(os.path.realpath(host_path))
    if not real.is_dir():
        raise SandboxWorkspaceEscapeError(
            f"workspace {str(host_path)!r} is not an existing directory; create it first"
        )
    return real


def resolve_cwd(workspace_real: Path, cwd: str) -> Path:
    """Resolve ``cwd`` (relative to the workspace) to a real directory inside it.

    Absolute paths are accepted only when they already point inside the
    workspace. ``..`` and symlinks are followed first and then checked, so
    neither can leave the workspace.
    """
    if "\x00" in cwd:
        raise SandboxWorkspaceEscapeError("working directory contains a NUL byte")
    joined = Path(cwd) if os.path.isabs(cwd) else workspace_real / cwd
    real = Path(os.path.realpath(joined))
    if not is_within(str(real), str(workspace_real)):
        raise SandboxWorkspaceEscapeError(
            f"working directory {cwd!r} resolves to {str(real)!r}, outside the workspace "
            f"{str(workspace_real)!r}; use a path inside the workspace"
        )
    if not real.is_dir():
        raise SandboxWorkspaceEscapeError(
            f"working directory {cwd!r} is not a directory inside the workspace"
        )
    return real


def relative_inside(workspace_real: Path, path: Path) -> str:
    """``path`` relative to the workspace root, as a POSIX string ('.' for the root)."""
    rel = os.path.relpath(path, workspace_real)
    return "." if rel == "." else rel
