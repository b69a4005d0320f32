"""PURE: is a path an agent gave usable, and where does it point?

Checked in the worker before any process is spent, in this order: type and
malformed input (NUL and control characters, over-long paths and names),
encodings that hide separators or dots (percent-encoding, also double,
backslashes), Unicode look-alikes (checked on the NFC form: fullwidth dots and
solidus, the one-dot leader U+2024, division slash…), home-directory paths,
absolute paths outside the workspace, ``..`` that leaves the workspace after
lexical normalisation, and the always-deny floor.

The result is a list of plain components below an anchor (the workspace, or
the file-system root for agents whose file-system scope is ``full``). The
sandboxed runner (``fs_runner``) walks those components with ``O_NOFOLLOW``
and checks symlinks, special files and the floor again on disk. ``..`` is
resolved lexically here, before symlinks: ``link/../x`` means ``x``.
"""

from __future__ import annotations

import os
import posixpath
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from tools_app.builtin.base import RefusalCode, ToolRefusedError
from tools_app.builtin.file_system.inside.runner import floor_match

Anchor = Literal["workspace", "root"]

DEFAULT_MAX_PATH_BYTES: Final = 4096
MAX_COMPONENT_BYTES: Final = 255

# Credentials and system secrets: never reachable, whatever the agent's scope
# and whatever the settings say (settings can only add to this list). A
# pattern matches any run of path components, without case; a leading '/'
# anchors it at the root.
ALWAYS_DENIED: Final[tuple[str, ...]] = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube/config",
    ".docker/config.json",
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".pgpass",
    ".my.cnf",
    ".npmrc",
    ".pypirc",
    ".bash_history",
    ".zsh_history",
    ".sh_history",
    ".history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".node_repl_history",
    ".lesshst",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "/etc/shadow*",
    "/etc/gshadow*",
    "/etc/sudoers*",
    "/etc/ssh",
    "/root",
    "/proc",
    "/sys",
    "/dev",
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/secrets",
)

_CONTROL_RE: Final = re.compile(r"[\x00-\x1f\x7f]")
_PERCENT_RE: Final = re.compile(r"%([0-9A-Fa-f]{2})")
# Characters a reader may take for '.', '/' or '\' that NFKC does not fold
# (NFKC-folding ones, like U+FF0E, U+2024 and U+FF0F, are caught generically).
_LOOKALIKES: Final = frozenset(
    "\u2215\u2044\u29f8\u29f9\u2216\u2571\u2572\u3002\uff61\u0589\u06d4\u2e31\u00b7\u2027"
)
_HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


@dataclass(frozen=True, slots=True)
class AgentPath:
    """A checked path: plain components below an anchor."""

    anchor: Anchor
    parts: tuple[str, ...]

    @property
    def is_anchor(self) -> bool:
        """True when the path names the anchor itself (the workspace root, or '/')."""
        return not self.parts

    def display(self) -> str:
        """The path as an agent would write it."""
        joined = "/".join(self.parts)
        if self.anchor == "root":
            return "/" + joined
        return joined or "."


@dataclass(frozen=True, slots=True)
class PathRules:
    """What paths an agent may use for one call."""

    workspace_roots: tuple[str, ...]
    """The workspace as given and as resolved; absolute paths inside it are accepted."""
    allow_absolute: bool = False
    """True for file-system scope ``full``: absolute paths anywhere (floor still applies)."""
    max_path_bytes: int = DEFAULT_MAX_PATH_BYTES
    extra_denied: tuple[str, ...] = ()

    @property
    def floor(self) -> tuple[str, ...]:
        """The always-deny patterns plus those the settings add."""
        return (*ALWAYS_DENIED, *self.extra_denied)


def _refuse(code: RefusalCode, raw: str, why: str) -> ToolRefusedError:
    shown = raw if len(raw) <= 200 else raw[:200] + "…"
    return ToolRefusedError(code, f"path {shown!r} {why}")


def _check_malformed(raw: object, rules: PathRules) -> str:
    if not isinstance(raw, str):
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "path must be a string")
    if raw == "":
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "path is empty; use '.' for the root")
    if "\x00" in raw:
        raise _refuse(RefusalCode.INVALID_ARGUMENT, raw.replace("\x00", "\\0"), "contains NUL")
    if _CONTROL_RE.search(raw):
        raise _refuse(RefusalCode.INVALID_ARGUMENT, raw, "contains a control character")
    size = len(raw.encode("utf-8", errors="surrogatepass"))
    if size > rules.max_path_bytes:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            f"path is {size} bytes long; the limit is {rules.max_path_bytes}",
        )
    return raw


def _check_encodings(raw: str) -> None:
    for match in _PERCENT_RE.finditer(raw):
        decoded = chr(int(match.group(1), 16))
        # '%25' is '%' itself: the start of a double encoding such as %252e.
        if decoded in "./\\%" or decoded < " " or decoded == "\x7f":
            raise _refuse(
                RefusalCode.PATH_NOT_REACHABLE,
                raw,
                f"contains the percent-encoded {match.group(0)!r}; write separators and dots "
                "literally",
            )
    if "\\" in raw:
        raise _refuse(
            RefusalCode.PATH_NOT_REACHABLE,
            raw,
            "contains a backslash, which some systems read as a separator; use '/'",
        )


def _check_unicode(text: str) -> None:
    for ch in text:
        if ch.isascii():
            continue
        category = unicodedata.category(ch)
        name = unicodedata.name(ch, "unnamed")
        if category in _HIDDEN_CATEGORIES:
            raise _refuse(
                RefusalCode.PATH_NOT_REACHABLE,
                text,
                f"contains the invisible or unassigned character U+{ord(ch):04X} ({name})",
            )
        folded = unicodedata.normalize("NFKC", ch)
        if ch in _LOOKALIKES or any(c in "./\\%" for c in folded):
            raise _refuse(
                RefusalCode.PATH_NOT_REACHABLE,
                text,
                f"contains U+{ord(ch):04X} ({name}), which looks like or folds to "
                f"{folded!r}; use plain ASCII separators and dots",
            )


def _inside(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def _components(text: str, raw: str, anchor: Anchor) -> tuple[str, ...]:
    parts: list[str] = []
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                where = "the workspace" if anchor == "workspace" else "the root"
                raise _refuse(
                    RefusalCode.PATH_NOT_REACHABLE,
                    raw,
                    f"uses '..' to leave {where}; use a path inside the workspace",
                )
            parts.pop()
            continue
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise _refuse(
                RefusalCode.INVALID_ARGUMENT,
                raw,
                f"has a name longer than {MAX_COMPONENT_BYTES} bytes",
            )
        parts.append(part)
    return tuple(parts)


def check_agent_path(raw: object, rules: PathRules) -> AgentPath:
    """Check a path argument and say where it points, or raise ToolRefusedError.

    Relative paths are taken from the workspace. Absolute paths are accepted
    when they lie inside the workspace (then made relative) or, with
    ``rules.allow_absolute``, anywhere (anchored at '/').
    """
    text = _check_malformed(raw, rules)
    _check_encodings(text)
    text = unicodedata.normalize("NFC", text)
    _check_unicode(text)
    if text.startswith("~"):
        raise _refuse(
            RefusalCode.PATH_NOT_REACHABLE,
            text,
            "is a home-directory path; use a path relative to the workspace",
        )
    anchor: Anchor = "workspace"
    if text.startswith("/"):
        full = posixpath.normpath("/" + text.lstrip("/"))
        root = next((r for r in rules.workspace_roots if _inside(full, r)), None)
        if root is not None:
            text = posixpath.relpath(full, root)
        elif rules.allow_absolute:
            anchor = "root"
        else:
            raise _refuse(
                RefusalCode.PATH_NOT_REACHABLE,
                text,
                "is an absolute path outside the workspace; use a path relative to the workspace",
            )
    path = AgentPath(anchor, _components(text, text, anchor))
    hit = floor_match(path.parts, path.anchor, list(rules.floor))
    if hit is not None:
        raise _refuse(
            RefusalCode.PATH_NOT_REACHABLE,
            path.display(),
            f"is under the always-denied path {hit!r}; credentials and system secrets are "
            "never reachable",
        )
    return path


def workspace_roots(workspace: os.PathLike[str] | str) -> tuple[str, ...]:
    """The workspace as given and as resolved (both normalised), for ``PathRules``."""
    given = posixpath.normpath(os.fspath(workspace))
    real = os.path.realpath(given)
    return (given,) if real == given else (given, real)


def normalise_patterns(patterns: Iterable[object]) -> tuple[str, ...]:
    """Extra always-deny patterns from settings as strings (non-strings are refused)."""
    result: list[str] = []
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern.strip("/"):
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT,
                f"setting denied_paths holds {pattern!r}; each entry must be a path pattern",
            )
        result.append(pattern)
    return tuple(result)
