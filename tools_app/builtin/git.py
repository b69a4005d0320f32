"""Version-control tools: status, log, diff, branch, commit, clone and push.

Git runs hardened inside ``context.sandbox`` (see ``git_command``); network is
given to the sandbox for clone and push only, whose URLs pass the SSRF guard
first (see ``git_url``). Flag injection is refused: branch names, revisions and
paths never start with '-', revisions follow ``--end-of-options``, paths follow
``--``, commit messages go through stdin.

Sub-constraint keys read: ``git`` (``none`` | ``local_only`` | ``read_and_branch``
| ``full``; missing refuses) — push needs ``full``, clone ``read_and_branch`` or
``full``, commit ``local_only`` or ``full``; and for clone/push the network keys
of ``web_policy`` (``network``, ``allowed_hosts``, ``block_private_addresses``).
Settings read: ``timeout_seconds``, ``hostname_allowlist`` (hosts that may be
private), ``denied_hosts``, ``allow_plain_http``, ``ssh_known_hosts_file``,
``dns_server``/``dns_port``, ``author_name``/``author_email``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from tools_app.builtin.base import RefusalCode, ToolContext, ToolOutcome, ToolRefusedError
from tools_app.builtin.git_command import (
    GitRunner,
    check_pathspec,
    check_ref,
    check_revision,
    invalid,
    open_repository,
    workspace_path,
)
from tools_app.builtin.git_url import GitRemote, check_remote_url, recheck_ssh
from tools_app.builtin.web_policy import build_guard, string_list
from tools_app.contracts import ToolContract
from tools_app.net import EgressGuard, Resolver
from trust_app.policy.categories import SafetyClass, ToolCategory
from trust_app.policy.levels import GIT_ACTIONS, GitAccess
from trust_app.policy.tool_view import ArgumentRole

_PATH: Final = {
    "type": "string",
    "default": ".",
    "maxLength": 4096,
    "description": "Repository directory, relative to the workspace.",
}
_PATHS: Final = {"type": "array", "items": {"type": "string", "maxLength": 4096}, "maxItems": 256}
_TEXT_OUTPUT: Final = {
    "type": "object",
    "properties": {"output": {"type": "string"}, "truncated": {"type": "boolean"}},
    "required": ["output", "truncated"],
}
_VC: Final = ToolCategory.VERSION_CONTROL


def require_git_access(context: ToolContext, action_type: str) -> None:
    """Refuse unless the agent's ``git`` sub-constraint permits ``action_type``."""
    mode = context.sub_constraints.get("git")
    if mode not in {m.value for m in GitAccess}:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            "the agent's git access is unknown, so git does not run; ask an admin to set it",
        )
    if mode != GitAccess.FULL and action_type not in GIT_ACTIONS[mode]:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            f"git access {mode} does not permit {action_type}; ask an admin if the task needs it",
        )


def _contract(
    name: str,
    action: str,
    safety: SafetyClass,
    summary: str,
    props: dict[str, Any],
    required: list[str] | None = None,
    output: dict[str, Any] | None = None,
    roles: dict[str, ArgumentRole] | None = None,
    idempotency: str = "optional",
    description: str = "",
) -> ToolContract:
    return ToolContract.model_validate(
        {
            "name": name,
            "category": _VC,
            "action_type": action,
            "safety_class": safety,
            "summary": summary,
            "description": description or summary,
            "idempotency": idempotency,
            "input_schema": {
                "type": "object",
                "properties": props,
                "required": required or [],
                "additionalProperties": False,
            },
            "output_schema": output or _TEXT_OUTPUT,
            "argument_roles": roles or {"path": ArgumentRole.PATH},
        }
    )


def _text(
    result_stdout: str, truncated: bool, extra: Mapping[str, Any] | None = None
) -> ToolOutcome:
    return ToolOutcome(
        content=result_stdout,
        structured={"output": result_stdout, "truncated": truncated, **(extra or {})},
        truncated=truncated,
    )


class GitStatusTool:
    """``git_status``: the branch and changed files of a repository."""

    contract = _contract(
        "git_status",
        "vcs:read",
        SafetyClass.READ,
        "Show the branch and the changed files of a repository.",
        {"path": _PATH},
    )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """``git status --porcelain --branch``."""
        require_git_access(context, "vcs:read")
        repo = open_repository(context, arguments.get("path", "."))
        git = GitRunner(context)
        git.local_config(repo)
        result = git.run_ok(
            repo, ["status", "--porcelain=v1", "--branch", "--untracked-files=normal"]
        )
        return _text(result.stdout, result.truncated)


class GitLogTool:
    """``git_log``: recent commits, newest first."""

    contract = _contract(
        "git_log",
        "vcs:read",
        SafetyClass.READ,
        "List recent commits of a repository.",
        {
            "path": _PATH,
            "max_count": {"type": "integer", "minimum": 1, "maximum": 500, "default": 20},
            "revision": {"type": "string", "maxLength": 256},
            "paths": _PATHS,
        },
        output={
            "type": "object",
            "properties": {
                "commits": {"type": "array", "items": {"type": "object"}},
                "truncated": {"type": "boolean"},
            },
            "required": ["commits", "truncated"],
        },
    )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """``git log`` with a fixed machine-readable format."""
        require_git_access(context, "vcs:read")
        repo = open_repository(context, arguments.get("path", "."))
        args = [
            "log",
            f"--max-count={int(arguments.get('max_count', 20))}",
            "--no-show-signature",
            "--format=%H%x1f%an%x1f%ae%x1f%aI%x1f%s%x1e",
            "--end-of-options",
        ]
        if arguments.get("revision"):
            args.append(check_revision(arguments["revision"]))
        args += ["--", *(check_pathspec(p) for p in arguments.get("paths", []))]
        git = GitRunner(context)
        git.local_config(repo)
        result = git.run_ok(repo, args)
        commits = []
        for record in result.stdout.split("\x1e"):
            fields = record.strip("\n").split("\x1f")
            if len(fields) == 5:
                keys = ("commit", "author", "email", "date", "subject")
                commits.append(dict(zip(keys, fields, strict=True)))
        content = "\n".join(
            f"{c['commit'][:12]} {c['date']} {c['author']}: {c['subject']}" for c in commits
        )
        return ToolOutcome(
            content=content,
            structured={"commits": commits, "truncated": result.truncated},
            truncated=result.truncated,
        )


class GitDiffTool:
    """``git_diff``: changes in the work tree, the index or between revisions."""

    contract = _contract(
        "git_diff",
        "vcs:read",
        SafetyClass.READ,
        "Show changes as a unified diff.",
        {
            "path": _PATH,
            "staged": {"type": "boolean", "default": False},
            "revision": {"type": "string", "maxLength": 256},
            "paths": _PATHS,
        },
    )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """``git diff`` without external diff drivers or text conversion."""
        require_git_access(context, "vcs:read")
        repo = open_repository(context, arguments.get("path", "."))
        args = ["diff", "--no-ext-diff", "--no-textconv", "--no-color"]
        if arguments.get("staged"):
            args.append("--cached")
        args.append("--end-of-options")
        if arguments.get("revision"):
            args.append(check_revision(arguments["revision"]))
        args += ["--", *(check_pathspec(p) for p in arguments.get("paths", []))]
        git = GitRunner(context)
        git.local_config(repo)
        result = git.run_ok(repo, args)
        return _text(result.stdout, result.truncated)


class GitBranchTool:
    """``git_branch``: list, create or switch branches."""

    contract = _contract(
        "git_branch",
        "vcs:branch",
        SafetyClass.WRITE,
        "List, create or switch branches.",
        {
            "path": _PATH,
            "action": {"type": "string", "enum": ["list", "create", "switch"], "default": "list"},
            "name": {"type": "string", "maxLength": 200},
            "start_point": {"type": "string", "maxLength": 256},
        },
    )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """List (default), create (from ``start_point``) or switch to ``name``."""
        require_git_access(context, "vcs:branch")
        repo = open_repository(context, arguments.get("path", "."))
        action = arguments.get("action", "list")
        git = GitRunner(context)
        git.local_config(repo)
        if action == "list":
            result = git.run_ok(
                repo, ["branch", "--list", "--no-color", "--format=%(HEAD) %(refname:short)"]
            )
            return _text(result.stdout, result.truncated)
        name = check_ref(arguments.get("name"))
        if action == "create":
            args = ["branch", "--no-track", "--end-of-options", name]
            if arguments.get("start_point"):
                args.append(check_revision(arguments["start_point"]))
        elif action == "switch":
            args = ["switch", "--no-guess", name]
        else:
            raise invalid("action must be list, create or switch")
        result = git.run_ok(repo, args, writable=True)
        return _text(result.stdout + result.stderr, result.truncated)


class GitCommitTool:
    """``git_commit``: stage the given paths (or all tracked changes) and commit."""

    contract = _contract(
        "git_commit",
        "vcs:commit",
        SafetyClass.WRITE,
        "Commit changes with a message.",
        {
            "path": _PATH,
            "message": {"type": "string", "minLength": 1, "maxLength": 20000},
            "paths": _PATHS,
            "all": {"type": "boolean", "default": False},
        },
        required=["message"],
    )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Stage, then ``git commit -F -`` (the message never touches the command line)."""
        require_git_access(context, "vcs:commit")
        repo = open_repository(context, arguments.get("path", "."))
        message = str(arguments["message"])
        if not message.strip() or "\x00" in message:
            raise invalid("message must be non-empty text without NUL")
        paths = [check_pathspec(p) for p in arguments.get("paths", [])]
        settings = context.settings
        name = str(settings.get("author_name") or context.agent_name)
        email = str(settings.get("author_email") or f"{context.agent_id}@agents.synthorg.invalid")
        git = GitRunner(
            context, extra_options=("-c", f"user.name={name}", "-c", f"user.email={email}")
        )
        git.local_config(repo)
        if paths:
            git.run_ok(repo, ["add", "--", *paths], writable=True)
        args = ["commit", "--no-verify", "--no-edit", "-F", "-"]
        if arguments.get("all"):
            args.insert(1, "--all")
        result = git.run_ok(repo, args, writable=True, stdin=message.encode("utf-8"))
        head = git.run_ok(repo, ["rev-parse", "HEAD"]).stdout.strip()
        return _text(result.stdout, result.truncated, {"commit": head})


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

    contract = _contract(
        "git_clone",
        "vcs:clone",
        SafetyClass.NETWORK,
        "Clone a remote repository into the workspace.",
        {
            "url": {"type": "string", "minLength": 1, "maxLength": 4096},
            "directory": {"type": "string", "minLength": 1, "maxLength": 4096},
            "branch": {"type": "string", "maxLength": 200},
            "depth": {"type": "integer", "minimum": 1, "maximum": 1000000},
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
        args += ["--", remote.url, str(target.relative_to(root))]
        recheck_ssh(remote, guard)
        git = GitRunner(context, extra_options=remote.pin_options())
        result = git.run_ok(None, args, writable=True, network=True)
        return _text(
            result.stderr.strip() or f"cloned into {directory}",
            result.truncated,
            {"directory": directory, "address": remote.endpoint.pinned_address},
        )


class GitPushTool:
    """``git_push``: push one branch to a remote's checked URL (never forced)."""

    contract = _contract(
        "git_push",
        "vcs:push",
        SafetyClass.NETWORK,
        "Push a branch to a remote.",
        {
            "path": _PATH,
            "remote": {"type": "string", "default": "origin", "maxLength": 200},
            "branch": {"type": "string", "maxLength": 200},
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
        pinned = GitRunner(context, extra_options=remote.pin_options())
        refspec = f"refs/heads/{branch}:refs/heads/{branch}"
        result = pinned.run_ok(
            repo,
            ["push", "--no-verify", "--porcelain", "--", remote.url, refspec],
            writable=True,
            network=True,
        )
        return _text(result.stdout, result.truncated)


git_status = GitStatusTool()
git_log = GitLogTool()
git_diff = GitDiffTool()
git_branch = GitBranchTool()
git_commit = GitCommitTool()
git_clone = GitCloneTool()
git_push = GitPushTool()

TOOLS: Final = (git_status, git_log, git_diff, git_branch, git_commit, git_clone, git_push)
