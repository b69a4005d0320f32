"""The git tools that reach other machines: git_clone and git_push (see ``git``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from common.vocabulary.categories import SafetyClass
from tools_app.builtin.base import ToolContext, ToolOutcome
from tools_app.builtin.git.command import (
    GitRunner,
    check_ref,
    invalid,
    open_repository,
    workspace_path,
)
from tools_app.builtin.git.contract import (
    PATH_PROPERTY,
    git_contract,
    require_git_access,
    text_outcome,
)
from tools_app.builtin.git.url import GitRemote, check_remote_url, recheck_ssh
from tools_app.builtin.web.policy import build_guard, string_list
from tools_app.net import EgressGuard, Resolver
from trust_app.policy.tool_view import ArgumentRole

CREDENTIAL_PROPERTY: Final = {
    "type": "string",
    "description": (
        'A secret granted to you for this tool, as "${secret:NAME}". git never holds it: '
        "the console adds it to the requests to the remote, when the secret's grant names "
        "the remote's host."
    ),
    "pattern": "^\\$\\{secret:[A-Za-z_][A-Za-z0-9_.-]{0,99}\\}$",
}


def _guard(context: ToolContext, resolver: Resolver | None) -> EgressGuard:
    settings = context.settings
    allow = string_list(settings, "hostname_allowlist")
    # The tool's hostname allowlist only makes hosts trusted; it does not restrict.
    sub = dict(context.sub_constraints)
    sub["allowed_hosts"] = [*string_list(sub, "allowed_hosts"), *allow]
    return build_guard(
        ToolContext(
            context.agent_id,
            context.agent_name,
            context.workspace,
            context.sandbox,
            context.owner,
            context.task_id,
            settings,
            sub,
        ),
        deny=string_list(settings, "denied_hosts"),
        resolver=resolver,
    )


class GitCloneTool:
    """``git_clone``: clone an https, ssh or scp-like URL into the workspace."""

    contract = git_contract(
        "git_clone",
        "vcs:clone",
        SafetyClass.NETWORK,
        "Clone a remote repository into the workspace.",
        {
            "url": {"type": "string", "minLength": 1, "maxLength": 4096},
            "directory": {"type": "string", "minLength": 1, "maxLength": 4096},
            "branch": {"type": "string", "maxLength": 200},
            "depth": {"type": "integer", "minimum": 1, "maximum": 1000000},
            "credential": CREDENTIAL_PROPERTY,
        },
        required=["url", "directory"],
        roles={"url": ArgumentRole.URL, "directory": ArgumentRole.PATH},
        description="Clones over https or ssh. file://, ext:: and local paths are refused; the "
        "host must resolve to public addresses unless allowlisted.",
    )

    def __init__(self, *, resolver: Resolver | None = None) -> None:
        self.resolver = resolver

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the URL, pin it, then ``git clone`` with no templates and no submodules."""
        require_git_access(context, "vcs:clone")
        directory = str(arguments["directory"])
        target = workspace_path(context, directory, must_exist=False)
        if target.exists():
            raise invalid(f"{directory!r} already exists; choose a new directory")
        guard = _guard(context, self.resolver)
        remote = check_remote_url(
            str(arguments["url"]),
            guard,
            allow_plain_http=bool(context.settings.get("allow_plain_http")),
        )
        args = ["clone", "--template=", "--no-recurse-submodules", "--no-local"]
        if arguments.get("branch"):
            args.append(f"--branch={check_ref(arguments['branch'])}")
        if arguments.get("depth"):
            args.append(f"--depth={int(arguments['depth'])}")
        root = workspace_path(context, ".")
        args += ["--", remote.git_url, str(target.relative_to(root))]
        recheck_ssh(remote, guard)
        git = GitRunner(
            context,
            extra_options=remote.pin_options(),
            ssh_options=remote.ssh_options(),
            remote=remote.endpoint,
        )
        result = git.run_ok(None, args, writable=True, network=True, path_args=(len(args) - 1,))
        return text_outcome(
            result.stderr.strip() or f"cloned into {directory}",
            result.truncated,
            {"directory": directory, "address": remote.endpoint.pinned_address},
        )


class GitPushTool:
    """``git_push``: push one branch to a remote's checked URL (never forced)."""

    contract = git_contract(
        "git_push",
        "vcs:push",
        SafetyClass.NETWORK,
        "Push a branch to a remote.",
        {
            "path": PATH_PROPERTY,
            "remote": {"type": "string", "default": "origin", "maxLength": 200},
            "branch": {"type": "string", "maxLength": 200},
            "credential": CREDENTIAL_PROPERTY,
        },
        required=["branch"],
        idempotency="required",
    )

    def __init__(self, *, resolver: Resolver | None = None) -> None:
        self.resolver = resolver

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Read the remote's URL, check and pin it, push ``branch`` to the same name."""
        require_git_access(context, "vcs:push")
        repo = open_repository(context, arguments.get("path", "."))
        remote_name = check_ref(arguments.get("remote", "origin"), "remote")
        branch = check_ref(arguments.get("branch"))
        git = GitRunner(context)
        config = git.local_config(repo)
        url = config.get(f"remote.{remote_name}.pushurl") or config.get(f"remote.{remote_name}.url")
        if not url:
            raise invalid(f"the repository has no remote named {remote_name!r}")
        guard = _guard(context, self.resolver)
        remote: GitRemote = check_remote_url(
            url, guard, allow_plain_http=bool(context.settings.get("allow_plain_http"))
        )
        recheck_ssh(remote, guard)
        pinned = GitRunner(
            context,
            extra_options=remote.pin_options(),
            ssh_options=remote.ssh_options(),
            remote=remote.endpoint,
        )
        refspec = f"refs/heads/{branch}:refs/heads/{branch}"
        result = pinned.run_ok(
            repo,
            ["push", "--no-verify", "--porcelain", "--", remote.git_url, refspec],
            writable=True,
            network=True,
            # The URL was checked; a remote section named after it must not redirect it.
            dropped_keys=("remote.**",),
        )
        return text_outcome(result.stdout, result.truncated)


@dataclass(frozen=True)
class PushPreview:
    """What ``git_push`` would send, read before it runs: the remote's URL as checked, the
    address it resolved to, and the branch's commits the remote-tracking refs lack."""

    remote: str
    url: str
    address: str
    commits: tuple[str, ...]
    more: bool


def push_preview(
    context: ToolContext,
    arguments: Mapping[str, Any],
    *,
    resolver: Resolver | None = None,
    max_commits: int = 20,
) -> PushPreview:
    """Read, without pushing or reaching the remote, what ``git_push`` would send.

    The same checks as the push (repository, names, the remote's URL through the
    guard); git runs read-only in the sandbox, with no network. The commits are
    those of the branch reachable from no remote-tracking ref of that remote, as
    this repository last saw it."""
    require_git_access(context, "vcs:push")
    repo = open_repository(context, arguments.get("path", "."))
    remote_name = check_ref(arguments.get("remote", "origin"), "remote")
    branch = check_ref(arguments.get("branch"))
    git = GitRunner(context)
    config = git.local_config(repo)
    url = config.get(f"remote.{remote_name}.pushurl") or config.get(f"remote.{remote_name}.url")
    if not url:
        raise invalid(f"the repository has no remote named {remote_name!r}")
    remote = check_remote_url(
        url,
        _guard(context, resolver),
        allow_plain_http=bool(context.settings.get("allow_plain_http")),
    )
    result = git.run_ok(
        repo,
        [
            "log",
            f"--max-count={max_commits + 1}",
            "--no-show-signature",
            "--format=%h %s",
            f"refs/heads/{branch}",
            "--not",
            f"--remotes={remote_name}/*",
            "--",
        ],
    )
    lines = tuple(line for line in result.stdout.splitlines() if line.strip())
    return PushPreview(
        remote=remote_name,
        url=remote.url,
        address=remote.endpoint.pinned_address,
        commits=lines[:max_commits],
        more=len(lines) > max_commits or result.truncated,
    )
