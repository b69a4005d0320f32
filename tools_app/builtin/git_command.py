"""Running git hardened inside the sandbox, on a repository inside the workspace.

Every invocation is ``env <hardening> git <-c options> --git-dir D --work-tree W ...``:

- ``GIT_CONFIG_NOSYSTEM=1``, ``GIT_CONFIG_GLOBAL=/dev/null``: no system or global
  config (HOME is the sandbox's empty scratch directory as well);
- ``GIT_TERMINAL_PROMPT=0``, ``GIT_ASKPASS``/``SSH_ASKPASS`` ``/bin/false``: never prompt;
- ``GIT_PROTOCOL_FROM_USER=0`` and ``protocol.allow=never`` with only https and ssh
  (and http when configured) allowed: no ``file``, ``ext`` or other transports;
- ``core.hooksPath=/dev/null``, ``core.fsmonitor=false``, ``credential.helper=``,
  gpg signing off, ``core.sshCommand`` with batch mode and no ssh config;
- explicit ``--git-dir``/``--work-tree``: no repository discovery. The sandbox
  strips every inherited ``GIT_*`` variable (``GIT_DIR``, ``GIT_WORK_TREE``,
  ``GIT_CEILING_DIRECTORIES``…); the hardening values are set by ``env`` in argv
  because the sandbox refuses ``GIT_*`` names in its environment additions.

A repository's own config is read first and refused when it holds a key outside a
small allowlist (``core.worktree``, ``include.path``, ``filter.*``, ``diff.external``,
``url.*.insteadOf``, ``core.sshCommand``… would make git run programs or go elsewhere).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolRefusedError,
)
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import (
    MountMode,
    NetworkPolicy,
    SandboxResult,
    SandboxSpec,
    WorkspaceMount,
)

HARDENING_ENV: Final = (
    "GIT_CONFIG_NOSYSTEM=1",
    "GIT_CONFIG_GLOBAL=/dev/null",
    "GIT_TERMINAL_PROMPT=0",
    "GIT_ASKPASS=/bin/false",
    "SSH_ASKPASS=/bin/false",
    "GIT_PROTOCOL_FROM_USER=0",
    "GIT_EDITOR=/bin/false",
    "GIT_PAGER=cat",
    "GIT_OPTIONAL_LOCKS=0",
)
_SSH_COMMAND: Final = (
    "ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes "
    "-o ProxyCommand=none -o ControlMaster=no -o PermitLocalCommand=no"
)
HARDENING_OPTIONS: Final = (
    "-c", "protocol.allow=never",
    "-c", "protocol.https.allow=always",
    "-c", "protocol.ssh.allow=always",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "credential.helper=",
    "-c", "commit.gpgSign=false",
    "-c", "tag.gpgSign=false",
    "-c", "core.askPass=/bin/false",
    "-c", "submodule.recurse=false",
)  # fmt: skip

# Keys a repository's own config may hold; anything else is refused before git runs.
_ALLOWED_LOCAL_KEYS: Final = tuple(
    re.compile(p)
    for p in (
        r"core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|"
        r"precomposeunicode|symlinks|autocrlf|eol|safecrlf|quotepath|abbrev)",
        r"extensions\.objectformat",
        r"remote\.[^\n]+\.(url|pushurl|fetch|tagopt|prune)",
        r"branch\.[^\n]+\.(remote|merge|rebase|pushremote)",
        r"user\.(name|email)",
        r"init\.defaultbranch",
        r"(pull\.(rebase|ff)|push\.default|fetch\.prune|gc\.auto|index\.version)",
        r"i18n\.(commitencoding|logoutputencoding)",
    )
)
REF_RE: Final = re.compile(
    r"^(?!-)(?!/)(?!.*\.\.)(?!.*@\{)(?!.*//)[A-Za-z0-9._/\-]{1,200}(?<![./])(?<!\.lock)$"
)
REVISION_RE: Final = re.compile(r"^(?!-)[A-Za-z0-9._/~^@{}:\-]{1,256}$")


def invalid(reason: str) -> ToolRefusedError:
    """An INVALID_ARGUMENT refusal."""
    return ToolRefusedError(RefusalCode.INVALID_ARGUMENT, reason)


def check_ref(name: object, what: str = "branch") -> str:
    """A branch name that git and the shell read one way only; never an option."""
    if not isinstance(name, str) or not REF_RE.match(name):
        raise invalid(
            f"{what} name {name!r} is not allowed: letters, digits, '.', '_', '/', '-', not "
            "starting with '-' or '/', no '..', '@{', '//' or trailing '.lock'"
        )
    return name


def check_revision(value: object) -> str:
    """A revision expression (``HEAD~2``, ``main..topic``); never an option."""
    if not isinstance(value, str) or not REVISION_RE.match(value):
        raise invalid(
            f"revision {value!r} is not allowed: no leading '-', no spaces or shell characters"
        )
    return value


def check_pathspec(value: object) -> str:
    """A path inside the repository, passed after ``--``; magic and escapes refused."""
    if not isinstance(value, str) or not value or "\x00" in value or len(value) > 4096:
        raise invalid(f"path {value!r} must be a non-empty string without NUL")
    if value.startswith(("-", ":", "/")) or ".." in Path(value).parts:
        raise invalid(
            f"path {value!r} must be relative to the repository, without '..', a leading "
            "'-' or pathspec magic"
        )
    return value


def workspace_path(context: ToolContext, relative: object, *, must_exist: bool = True) -> Path:
    """``relative`` resolved inside the workspace (symlinks followed), or a refusal."""
    if not isinstance(relative, str) or "\x00" in relative or len(relative) > 4096:
        raise ToolRefusedError(RefusalCode.PATH_NOT_REACHABLE, "path must be a string without NUL")
    if os.path.isabs(relative) or relative.startswith("-"):
        raise ToolRefusedError(
            RefusalCode.PATH_NOT_REACHABLE,
            f"path {relative!r} must be relative to the workspace and not start with '-'",
        )
    root = Path(os.path.realpath(context.workspace))
    target = Path(os.path.realpath(root / relative))
    if target != root and root not in target.parents:
        raise ToolRefusedError(
            RefusalCode.PATH_NOT_REACHABLE, f"path {relative!r} leads outside the workspace"
        )
    if must_exist and not target.is_dir():
        raise ToolRefusedError(RefusalCode.PATH_NOT_REACHABLE, f"{relative!r} is not a directory")
    return target


@dataclass(frozen=True, slots=True)
class Repository:
    """A checked repository: its work tree and git directory, inside the workspace."""

    work_tree: Path
    git_dir: Path
    relative: str


def open_repository(context: ToolContext, relative: object) -> Repository:
    """The repository at ``relative``; its ``.git`` must be a real directory, no indirection."""
    work_tree = workspace_path(context, "." if relative is None else relative)
    git_dir = work_tree / ".git"
    if git_dir.is_symlink() or not git_dir.is_dir():
        raise ToolRefusedError(
            RefusalCode.PATH_NOT_REACHABLE,
            f"{relative or '.'} is not a git repository (no .git directory; .git files and "
            "links are not followed)",
        )
    for indirection in ("commondir", "objects/info/alternates", "config.worktree"):
        if os.path.lexists(git_dir / indirection):
            raise ToolRefusedError(
                RefusalCode.PATH_NOT_REACHABLE,
                f".git/{indirection} points git outside this repository; it is not supported",
            )
    if (git_dir / "config").is_symlink():
        raise ToolRefusedError(RefusalCode.PATH_NOT_REACHABLE, ".git/config must not be a link")
    root = Path(os.path.realpath(context.workspace))
    return Repository(work_tree, git_dir, str(work_tree.relative_to(root)) or ".")


class GitRunner:
    """Builds hardened git command lines and runs them through ``context.sandbox``."""

    def __init__(self, context: ToolContext, *, extra_options: Sequence[str] = ()) -> None:
        self.context = context
        self.settings: Mapping[str, Any] = context.settings
        self.extra_options = tuple(extra_options)

    def argv(self, repository: Repository | None, args: Sequence[str]) -> tuple[str, ...]:
        """The full command line for ``git args`` on ``repository`` (or none, for clone)."""
        options: list[str] = [*HARDENING_OPTIONS, "-c", f"core.sshCommand={self._ssh_command()}"]
        if self.settings.get("allow_plain_http"):
            options += ["-c", "protocol.http.allow=always"]
        options += self.extra_options
        if repository is not None:
            options += [
                "-c", f"safe.directory={repository.work_tree}",
                f"--git-dir={repository.git_dir}",
                f"--work-tree={repository.work_tree}",
            ]  # fmt: skip
        return ("env", *HARDENING_ENV, "git", "--no-pager", *options, *args)

    def _ssh_command(self) -> str:
        known_hosts = str(self.settings.get("ssh_known_hosts_file") or "/dev/null")
        if not re.match(r"^/[A-Za-z0-9._/\-]+$", known_hosts):
            raise invalid("config 'ssh_known_hosts_file' must be an absolute plain path")
        return f"{_SSH_COMMAND} -o UserKnownHostsFile={known_hosts}"

    def run(
        self,
        repository: Repository | None,
        args: Sequence[str],
        *,
        writable: bool = False,
        network: bool = False,
        stdin: bytes = b"",
        cwd: str = ".",
    ) -> SandboxResult:
        """Run git in the sandbox; a sandbox refusal becomes a tool failure."""
        timeout = float(self.settings.get("timeout_seconds", 120 if network else 30))
        spec = SandboxSpec(
            argv=self.argv(repository, args),
            workspace=WorkspaceMount(
                self.context.workspace, MountMode.READ_WRITE if writable else MountMode.READ_ONLY
            ),
            cwd=cwd,
            stdin=stdin,
            timeout_seconds=timeout,
            network=NetworkPolicy.BRIDGE if network else NetworkPolicy.NONE,
            owner=self.context.owner,
        )
        try:
            return self.context.sandbox.run(spec)
        except SandboxError as exc:
            raise ToolFailedError(f"the sandbox refused to run git: {exc.reason}") from exc

    def run_ok(
        self, repository: Repository | None, args: Sequence[str], **kw: Any
    ) -> SandboxResult:
        """``run``, raising ToolFailedError with git's message when it does not succeed."""
        result = self.run(repository, args, **kw)
        if not result.ok:
            message = (result.stderr or result.stdout).strip()[-2000:]
            raise ToolFailedError(
                f"git {args[0]} failed (exit {result.exit_code}): {message}", code="GIT_FAILED"
            )
        return result

    def local_config(self, repository: Repository) -> dict[str, str]:
        """The repository's own config, refused when a key is outside the allowlist."""
        result = self.run_ok(repository, ["config", "--local", "--null", "--list"])
        entries: dict[str, str] = {}
        for item in result.stdout.split("\0"):
            if not item:
                continue
            key, _, value = item.partition("\n")
            key = key.lower()
            if not any(p.fullmatch(key) for p in _ALLOWED_LOCAL_KEYS):
                raise ToolRefusedError(
                    RefusalCode.INVALID_ARGUMENT,
                    f"the repository's config sets {key!r}, which can make git run programs or "
                    "reach other places; remove it from .git/config",
                )
            entries[key] = value
        return entries
