"""Running git hardened inside the sandbox, on a repository inside the workspace.

Every invocation is ``python3 -I -S -c <git_launcher> SPEC git-args...``: the
launcher, inside the sandbox, checks the repository (no ``.git`` file or link,
no link anywhere under ``.git``), reads ``.git/config`` once, refuses a key
outside ``ALLOWED_LOCAL_KEYS`` and runs git on a private copy of what it
checked, with the environment and ``-c`` options of ``git_hardening``: no
system or global config, no prompts, no hooks, no pager or editor, no
credential helpers or signing programs, only the protocols the call needs
(``GIT_ALLOW_PROTOCOL``: none without network), no redirects. Paths are
relative to the working directory the sandbox gives (the work tree), so the
same command runs on every backend (``/workspace`` inside namespaces).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolRefusedError,
)
from tools_app.builtin.file_system.paths import MAX_COMPONENT_BYTES
from tools_app.builtin.git.hardening import (
    ALLOWED_LOCAL_KEYS,
    HARDENING_ENV,
    HARDENING_OPTIONS,
    SSH_COMMAND,
    protocols,
)
from tools_app.builtin.git.inside.launcher import REFUSED_EXIT, REFUSED_MARKER
from tools_app.egress.decision import NetworkGrant
from tools_app.egress.mount import MOUNT_POINT, TRUST_BUNDLE, sealed_call, ssh_proxy_command
from tools_app.net import CheckedEndpoint
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import (
    MountMode,
    NetworkPolicy,
    SandboxResult,
    SandboxSpec,
    WorkspaceMount,
)

LAUNCHER_SOURCE: Final = (Path(__file__).parent / "inside" / "launcher.py").read_text(
    encoding="utf-8"
)
LAUNCHER_ARGV: Final = ("python3", "-I", "-S", "-c", LAUNCHER_SOURCE)
# A repository config larger than this is refused, not parsed (real ones are a few KiB).
MAX_CONFIG_BYTES: Final = 256 * 1024
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
    check_segments(value, "path")
    return value


def check_segments(value: str, what: str) -> None:
    """Refuse a path with a name longer than the file system allows (before the OS does)."""
    for part in value.split("/"):
        if len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
            raise invalid(
                f"{what} {value[:80]!r}... has a name longer than {MAX_COMPONENT_BYTES} bytes, "
                "which no file system here can hold"
            )


def workspace_path(context: ToolContext, relative: object, *, must_exist: bool = True) -> Path:
    """``relative`` resolved inside the workspace (symlinks followed), or a refusal."""
    if not isinstance(relative, str) or "\x00" in relative or len(relative) > 4096:
        raise ToolRefusedError(RefusalCode.PATH_NOT_REACHABLE, "path must be a string without NUL")
    if os.path.isabs(relative) or relative.startswith("-"):
        raise ToolRefusedError(
            RefusalCode.PATH_NOT_REACHABLE,
            f"path {relative!r} must be relative to the workspace and not start with '-'",
        )
    check_segments(relative, "path")
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
    """A repository's work tree, relative to the workspace (the launcher checks its .git)."""

    work_tree: Path
    relative: str


def open_repository(context: ToolContext, relative: object) -> Repository:
    """The repository at ``relative``; a missing or linked ``.git`` is refused at once.

    This early look saves a process; the launcher checks again, inside the
    sandbox, in the process that then runs git.
    """
    work_tree = workspace_path(context, "." if relative is None else relative)
    git_dir = work_tree / ".git"
    if git_dir.is_symlink() or not git_dir.is_dir():
        raise ToolRefusedError(
            RefusalCode.PATH_NOT_REACHABLE,
            f"{relative or '.'} is not a git repository (no .git directory; .git files and "
            "links are not followed)",
        )
    root = Path(os.path.realpath(context.workspace))
    return Repository(work_tree, str(work_tree.relative_to(root)) or ".")


def default_identity(context: ToolContext) -> tuple[str, str]:
    """The author name and email of the agent's commits unless configured otherwise."""
    settings = context.settings
    name = str(settings.get("author_name") or context.agent_name)
    email = str(settings.get("author_email") or f"{context.agent_id}@agents.synthorg.invalid")
    return name, email


def launcher_argv(spec: Mapping[str, Any], args: Sequence[str]) -> tuple[str, ...]:
    """The sandbox command line: the launcher, its ``name=value`` words, ``--``, git's args."""
    words: list[str] = []
    for name, value in spec.items():
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if isinstance(item, bool):
                item = "1" if item else "0"
            words.append(f"{name}={item}")
    return (*LAUNCHER_ARGV, *words, "--", *args)


def shell_launcher_argv(
    *, ceiling_depth: int, writable: bool, identity: tuple[str, str]
) -> tuple[str, ...]:
    """The launcher, before git's arguments, for a git command ``shell_command`` runs.

    The repository is found from the working directory (after ``-C``), never
    more than ``ceiling_depth`` levels up (the workspace root); no network.
    ``identity`` is the author when the repository names none.
    """
    spec = {
        "mode": "discover",
        "ceiling_depth": ceiling_depth,
        "allow": ALLOWED_LOCAL_KEYS,
        "max_config_bytes": MAX_CONFIG_BYTES,
        "writable": writable,
        "identity": identity,
        "env": [f"{k}={v}" for k, v in HARDENING_ENV.items()],
        "option": HARDENING_OPTIONS,
    }
    return launcher_argv(spec, ())


def launcher_refusal(result: SandboxResult) -> ToolRefusedError | None:
    """The launcher's refusal in ``result``, if it refused."""
    if result.exit_code != REFUSED_EXIT or not result.stderr.startswith(REFUSED_MARKER):
        return None
    line = result.stderr[len(REFUSED_MARKER) :].splitlines()[0]
    code_name, _, reason = line.partition(": ")
    code = RefusalCode.__members__.get(code_name, RefusalCode.INVALID_ARGUMENT)
    return ToolRefusedError(code, reason or line)


class GitRunner:
    """Builds launcher command lines and runs them through ``context.sandbox``."""

    def __init__(
        self,
        context: ToolContext,
        *,
        extra_options: Sequence[str] = (),
        ssh_options: str = "",
        remote: CheckedEndpoint | None = None,
    ) -> None:
        self.context = context
        self.settings: Mapping[str, Any] = context.settings
        self.extra_options = tuple(extra_options)
        self.ssh_options = ssh_options
        # The checked remote: a call with network reaches it, and only it, through the proxy.
        self.remote = remote

    def spec(
        self,
        repository: Repository | None,
        *,
        network: bool = False,
        writable: bool = False,
        dropped_keys: Sequence[str] = (),
        print_config: bool = False,
        path_args: Sequence[int] = (),
        sealed: bool = False,
    ) -> dict[str, Any]:
        """What the launcher is told: mode, checked keys, environment and options.

        ``sealed``: the call's proxy adds a secret to the remote's requests, ending TLS
        with the console's authority, which git then trusts beside the system's roots."""
        env = dict(HARDENING_ENV)
        env["GIT_ALLOW_PROTOCOL"] = protocols(
            network=network, allow_plain_http=bool(self.settings.get("allow_plain_http"))
        )
        if network:
            env["GIT_SSH_COMMAND"] = self._ssh_command()
        if network and sealed:
            env["GIT_SSL_CAINFO"] = f"{MOUNT_POINT}/{TRUST_BUNDLE}"
        return {
            "mode": "repo" if repository is not None else "none",
            "shown": repository.relative if repository is not None else ".",
            "allow": ALLOWED_LOCAL_KEYS,
            "drop": tuple(dropped_keys),
            "max_config_bytes": MAX_CONFIG_BYTES,
            "writable": writable,
            "print_config": print_config,
            "path_arg": tuple(path_args),
            "env": [f"{k}={v}" for k, v in env.items()],
            "option": [*HARDENING_OPTIONS, *self.extra_options],
        }

    def _ssh_command(self) -> str:
        known_hosts = str(self.settings.get("ssh_known_hosts_file") or "/dev/null")
        if not re.match(r"^/[A-Za-z0-9._/\-]+$", known_hosts):
            raise invalid("config 'ssh_known_hosts_file' must be an absolute plain path")
        # ssh takes the first value of an option: the proxy replaces "none", never follows it.
        proxy = f"-o 'ProxyCommand={ssh_proxy_command()}'"
        ssh = SSH_COMMAND.replace("-o ProxyCommand=none", proxy)
        return f"{ssh} -o UserKnownHostsFile={known_hosts}{self.ssh_options}"

    def run(
        self,
        repository: Repository | None,
        args: Sequence[str],
        *,
        writable: bool = False,
        network: bool = False,
        stdin: bytes = b"",
        **spec_options: Any,
    ) -> SandboxResult:
        """Run git through the launcher; its refusal becomes ToolRefusedError."""
        timeout = float(self.settings.get("timeout_seconds", 120 if network else 30))
        with self._network(network) as egress:
            launcher = self.spec(
                repository,
                network=network,
                writable=writable,
                sealed=sealed_call(egress.get("egress_dir")),
                **spec_options,
            )
            spec = SandboxSpec(
                argv=launcher_argv(launcher, args),
                workspace=WorkspaceMount(
                    self.context.workspace,
                    MountMode.READ_WRITE if writable else MountMode.READ_ONLY,
                ),
                cwd=repository.relative if repository is not None else ".",
                stdin=stdin,
                timeout_seconds=timeout,
                owner=self.context.owner,
                **egress,
            )
            try:
                result = self.context.sandbox.run(spec)
            except SandboxError as exc:
                raise ToolFailedError(f"the sandbox refused to run git: {exc.reason}") from exc
        if result.timed_out:
            what = f"git {args[0]}" if args else "git"
            raise ToolFailedError(
                f"{what} did not finish within {timeout:g} s", code="TIMED_OUT", timed_out=True
            )
        refusal = launcher_refusal(result)
        if refusal is not None:
            raise refusal
        return result

    @contextlib.contextmanager
    def _network(self, network: bool) -> Iterator[dict[str, Any]]:
        """No network, or the proxy pinned to the checked remote."""
        if not network:
            yield {"network": NetworkPolicy.NONE}
            return
        if self.remote is None:
            raise ToolFailedError("git asked for the network without a checked remote")
        if self.context.egress is None:
            raise ToolFailedError(
                "this worker runs no egress proxy, so git cannot reach the remote",
                code="EGRESS_UNAVAILABLE",
            )
        grant = NetworkGrant(mode="allowlist_only", pinned=self.remote)
        with self.context.egress.session(grant) as port:
            yield {"network": NetworkPolicy.PROXY, "egress_dir": port.directory}

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
        """The repository's checked config (refused when a key is outside the allowlist)."""
        result = self.run_ok(repository, ["config"], print_config=True)
        entries: dict[str, str] = {}
        for item in result.stdout.split("\0"):
            if item:
                key, _, value = item.partition("\n")
                entries[key] = value
        return entries
