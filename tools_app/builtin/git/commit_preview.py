"""What ``git_commit`` would record, read before it runs (see ``GitCommitTool``).

The call commits what is staged, after staging the files named in ``paths`` (new
ones included) and, with ``all``, every change to tracked files. The preview reads
each part with git in the sandbox, the workspace mounted read-only: the staged diff
(``diff --cached``), the tracked changes the call would stage (``diff``), and the
untracked files under ``paths`` it would add (``ls-files --others``). Nothing is
staged, locked or written; the diff is cut to a bounded number of lines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from tools_app.builtin.base import ToolContext
from tools_app.builtin.git.command import GitRunner, check_pathspec, open_repository
from tools_app.builtin.git.contract import require_git_access

# Plain text, never a program's idea of a diff: no drivers, no conversion, no colour.
_DIFF: Final = ("diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames", "-p")
_HEADER: Final = re.compile(r"^diff --git (?:\"?a/)(.*?)\"? (?:\"?b/)")

FileState = Literal["added", "modified", "deleted", "new"]


@dataclass(frozen=True)
class CommittedFile:
    """One file the commit would record: ``how`` it changes, and whether it is staged
    now (``staged``) or would be staged by the call itself."""

    path: str
    how: FileState
    staged: bool


@dataclass(frozen=True)
class CommitPreview:
    """The files the commit would record and the start of its diff (``diff_lines``
    at most; ``more_lines`` not shown; ``cut``: git's own output was cut)."""

    files: tuple[CommittedFile, ...]
    diff: tuple[str, ...]
    more_lines: int
    cut: bool


def _files_of(patch: str, *, staged: bool) -> list[CommittedFile]:
    found: list[CommittedFile] = []
    for block in patch.split("\ndiff --git "):
        lines = block.splitlines()
        if not lines:
            continue
        head = lines[0] if lines[0].startswith("diff --git ") else f"diff --git {lines[0]}"
        matched = _HEADER.match(head)
        if matched is None:
            continue
        how: FileState = "modified"
        if any(line.startswith("new file mode") for line in lines[1:4]):
            how = "added"
        elif any(line.startswith("deleted file mode") for line in lines[1:4]):
            how = "deleted"
        found.append(CommittedFile(matched.group(1), how, staged))
    return found


def commit_preview(
    context: ToolContext,
    arguments: Mapping[str, Any],
    *,
    diff_lines: int = 200,
) -> CommitPreview:
    """Read, without staging or committing, what ``git_commit`` with ``arguments`` would
    record. The same checks as the call (git access, repository, paths)."""
    require_git_access(context, "vcs:commit")
    repo = open_repository(context, arguments.get("path", "."))
    paths: Sequence[str] = [check_pathspec(p) for p in arguments.get("paths", [])]
    git = GitRunner(context)
    staged = git.run_ok(repo, [*_DIFF, "--cached", "--"])
    parts = [staged.stdout]
    files = _files_of(staged.stdout, staged=True)
    cut = staged.truncated
    if paths or arguments.get("all"):
        # ``all`` stages every tracked change; ``paths`` alone, those under them.
        scope = [] if arguments.get("all") else list(paths)
        unstaged = git.run_ok(repo, [*_DIFF, "--", *scope])
        parts.append(unstaged.stdout)
        files += _files_of(unstaged.stdout, staged=False)
        cut = cut or unstaged.truncated
    if paths:
        others = git.run_ok(
            repo, ["ls-files", "--others", "--exclude-standard", "-z", "--", *paths]
        )
        files += [CommittedFile(name, "new", False) for name in others.stdout.split("\0") if name]
        cut = cut or others.truncated
    lines = [line for part in parts for line in part.splitlines()]
    return CommitPreview(
        files=tuple(files),
        diff=tuple(lines[:diff_lines]),
        more_lines=max(0, len(lines) - diff_lines),
        cut=cut,
    )
