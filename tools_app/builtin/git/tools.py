"""Version-control tools: status, log, diff, branch, commit, clone and push.

Git runs hardened inside ``context.sandbox`` (see ``git_command``), by default the
namespace backend, which shows it the agent's workspace only; network is
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

from common.vocabulary.categories import SafetyClass
from tools_app.builtin.base import ToolContext, ToolOutcome
from tools_app.builtin.git.command import (
    GitRunner,
    check_pathspec,
    check_ref,
    check_revision,
    default_identity,
    invalid,
    open_repository,
)
from tools_app.builtin.git.contract import (
    PATH_PROPERTY,
    PATHS_PROPERTY,
    git_contract,
    require_git_access,
    text_outcome,
)
from tools_app.builtin.git.remote import GitCloneTool, GitPushTool

__all__ = ["TOOLS", "GitCloneTool", "GitPushTool"]


class GitStatusTool:
    """``git_status``: the branch and changed files of a repository."""

    contract = git_contract(
        "git_status",
        "vcs:read",
        SafetyClass.READ,
        "Show the branch and the changed files of a repository.",
        {"path": PATH_PROPERTY},
    )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """``git status --porcelain --branch``."""
        require_git_access(context, "vcs:read")
        repo = open_repository(context, arguments.get("path", "."))
        git = GitRunner(context)
        result = git.run_ok(
            repo, ["status", "--porcelain=v1", "--branch", "--untracked-files=normal"]
        )
        return text_outcome(result.stdout, result.truncated)


class GitLogTool:
    """``git_log``: recent commits, newest first."""

    contract = git_contract(
        "git_log",
        "vcs:read",
        SafetyClass.READ,
        "List recent commits of a repository.",
        {
            "path": PATH_PROPERTY,
            "max_count": {"type": "integer", "minimum": 1, "maximum": 500, "default": 20},
            "revision": {"type": "string", "maxLength": 256},
            "paths": PATHS_PROPERTY,
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

    contract = git_contract(
        "git_diff",
        "vcs:read",
        SafetyClass.READ,
        "Show changes as a unified diff.",
        {
            "path": PATH_PROPERTY,
            "staged": {"type": "boolean", "default": False},
            "revision": {"type": "string", "maxLength": 256},
            "paths": PATHS_PROPERTY,
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
        result = git.run_ok(repo, args)
        return text_outcome(result.stdout, result.truncated)


class GitBranchTool:
    """``git_branch``: list, create or switch branches."""

    contract = git_contract(
        "git_branch",
        "vcs:branch",
        SafetyClass.WRITE,
        "List, create or switch branches.",
        {
            "path": PATH_PROPERTY,
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
        if action == "list":
            result = git.run_ok(
                repo, ["branch", "--list", "--no-color", "--format=%(HEAD) %(refname:short)"]
            )
            return text_outcome(result.stdout, result.truncated)
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
        return text_outcome(result.stdout + result.stderr, result.truncated)


class GitCommitTool:
    """``git_commit``: stage the given paths (or all tracked changes) and commit."""

    contract = git_contract(
        "git_commit",
        "vcs:commit",
        SafetyClass.WRITE,
        "Commit changes with a message.",
        {
            "path": PATH_PROPERTY,
            "message": {"type": "string", "minLength": 1, "maxLength": 20000},
            "paths": PATHS_PROPERTY,
            "all": {
                "type": "boolean",
                "default": False,
                "description": (
                    "Also commit every change to files git already tracks (git commit "
                    "--all). New, untracked files are not added: name them in `paths`."
                ),
            },
        },
        required=["message"],
        description=(
            "Commits what is staged, with `message`. The files named in `paths` are staged "
            "first (`git add`: new files included). `all: true` also commits every change "
            "to files git already tracks, deletions included, but does not add new "
            "(untracked) files: name those in `paths`. Commit hooks are not run."
        ),
    )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Stage, then ``git commit -F -`` (the message never touches the command line)."""
        require_git_access(context, "vcs:commit")
        repo = open_repository(context, arguments.get("path", "."))
        message = str(arguments["message"])
        if not message.strip() or "\x00" in message:
            raise invalid("message must be non-empty text without NUL")
        paths = [check_pathspec(p) for p in arguments.get("paths", [])]
        name, email = default_identity(context)
        git = GitRunner(
            context, extra_options=("-c", f"user.name={name}", "-c", f"user.email={email}")
        )
        if paths:
            git.run_ok(repo, ["add", "--", *paths], writable=True)
        args = ["commit", "--no-verify", "--no-edit", "-F", "-"]
        if arguments.get("all"):
            args.insert(1, "--all")
        result = git.run_ok(repo, args, writable=True, stdin=message.encode("utf-8"))
        head = git.run_ok(repo, ["rev-parse", "HEAD"]).stdout.strip()
        return text_outcome(result.stdout, result.truncated, {"commit": head})


git_status = GitStatusTool()
git_log = GitLogTool()
git_diff = GitDiffTool()
git_branch = GitBranchTool()
git_commit = GitCommitTool()
git_clone = GitCloneTool()
git_push = GitPushTool()

TOOLS: Final = (git_status, git_log, git_diff, git_branch, git_commit, git_clone, git_push)
