"""What ``git_commit`` would record, read through the real namespace sandbox before it runs.

Each case compares the preview with what the real ``git_commit`` then records (the
files of the new commit), and checks that reading it changed nothing: the index, the
refs and the work tree are as they were.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tools_app.builtin.git_fixtures import (
    RecordingSandbox,
    git,
    git_context,
    grant,
    make_repo,
    sandbox_user_ready,
)
from tools_app.builtin.base import ToolRefusedError
from tools_app.builtin.git.commit_preview import CommitPreview, commit_preview
from tools_app.builtin.git.tools import git_commit
from tools_app.sandbox.protocol import MountMode

ROOT = Path("/tmp/synthorg-test-workspaces")


@pytest.fixture(scope="module", autouse=True)
def _sandbox_user() -> None:
    sandbox_user_ready()


@pytest.fixture
def workspace() -> Iterator[Path]:
    ROOT.mkdir(mode=0o755, exist_ok=True)
    os.chmod(ROOT, 0o755)
    path = ROOT / f"gitp-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def repo(workspace: Path) -> Path:
    """``README.md`` tracked and changed again in the work tree, ``staged.txt`` added to
    the index, ``gone.txt`` tracked, then deleted from the work tree, ``new.txt``
    untracked."""
    path = make_repo(workspace / "proj")
    (path / "gone.txt").write_text("old\n")
    git(path, "add", "gone.txt")
    git(path, "commit", "-q", "-m", "third commit")
    (path / "staged.txt").write_text("staged line\n")
    git(path, "add", "staged.txt")
    (path / "README.md").write_text("hello\nworld\nagain\n")
    (path / "gone.txt").unlink()
    (path / "new.txt").write_text("brand new\n")
    grant(workspace)
    return path


def state(repo: Path) -> tuple[str, str, str]:
    """The index's bytes, the refs and the work tree's status, to compare before/after."""
    index = hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest()
    # No optional locks: the test's own status must not refresh the index it compares.
    status = git(repo, "--no-optional-locks", "status", "--porcelain")
    return index, git(repo, "for-each-ref"), status


def previewed(workspace: Path, arguments: dict[str, Any]) -> tuple[CommitPreview, list[str]]:
    sandbox = RecordingSandbox()
    found = commit_preview(git_context(workspace, sandbox), arguments)
    # Every git run of the preview saw the workspace read-only.
    assert sandbox.specs and all(
        s.workspace is not None and s.workspace.mode == MountMode.READ_ONLY for s in sandbox.specs
    )
    return found, sorted(f"{f.how[0].upper()} {f.path}" for f in found.files)


def committed(workspace: Path, repo: Path, arguments: dict[str, Any]) -> list[str]:
    """Run the real git_commit and list the files of the commit it made, as
    ``previewed`` does (A, M, D; a new file is A)."""
    git_commit.run(git_context(workspace, RecordingSandbox()), arguments)
    shown = git(repo, "show", "--no-renames", "--name-status", "--format=", "HEAD")
    return sorted(line.replace("\t", " ") for line in shown.splitlines() if line.strip())


def as_committed(listed: list[str]) -> list[str]:
    # A new file the call adds is an added file in the commit.
    return sorted(item.replace("N ", "A ", 1) for item in listed)


def test_what_is_staged_is_what_a_plain_commit_records(workspace: Path, repo: Path) -> None:
    before = state(repo)
    found, listed = previewed(workspace, {"path": "proj", "message": "m"})
    assert listed == ["A staged.txt"]
    assert all(f.staged for f in found.files)
    assert "+staged line" in found.diff and found.more_lines == 0 and not found.cut
    # The README change and the deletion are not staged: not in this commit.
    assert not any("README" in line or "gone" in line for line in found.diff)
    assert state(repo) == before
    assert committed(workspace, repo, {"path": "proj", "message": "m"}) == as_committed(listed)


def test_paths_add_new_files_and_their_tracked_changes(workspace: Path, repo: Path) -> None:
    arguments = {"path": "proj", "message": "m", "paths": ["new.txt", "README.md"]}
    before = state(repo)
    found, listed = previewed(workspace, arguments)
    assert listed == ["A staged.txt", "M README.md", "N new.txt"]
    by_path = {f.path: f for f in found.files}
    assert by_path["README.md"].staged is False and by_path["staged.txt"].staged is True
    assert "+again" in found.diff
    assert state(repo) == before
    assert committed(workspace, repo, arguments) == as_committed(listed)


def test_all_takes_every_tracked_change_and_no_untracked_file(workspace: Path, repo: Path) -> None:
    arguments = {"path": "proj", "message": "m", "all": True}
    before = state(repo)
    _, listed = previewed(workspace, arguments)
    assert listed == ["A staged.txt", "D gone.txt", "M README.md"]
    assert state(repo) == before
    assert committed(workspace, repo, arguments) == as_committed(listed)
    # The control of "no untracked file": new.txt is still untracked after the commit.
    assert "?? new.txt" in git(repo, "status", "--porcelain")


def test_nothing_staged_and_nothing_named_is_an_empty_preview(workspace: Path) -> None:
    repo = make_repo(workspace / "clean")
    grant(workspace)
    found, listed = previewed(workspace, {"path": "clean", "message": "m"})
    assert listed == [] and found.diff == ()
    # The control: the same repository with one staged change lists it.
    (repo / "README.md").write_text("changed\n")
    git(repo, "add", "README.md")
    assert previewed(workspace, {"path": "clean", "message": "m"})[1] == ["M README.md"]


def test_a_long_diff_is_cut_to_its_bound_and_says_how_much_is_left(
    workspace: Path, repo: Path
) -> None:
    (repo / "big.txt").write_text("".join(f"line {n}\n" for n in range(500)))
    git(repo, "add", "big.txt")
    found = commit_preview(
        git_context(workspace, RecordingSandbox()), {"path": "proj", "message": "m"}, diff_lines=50
    )
    assert len(found.diff) == 50
    assert found.more_lines > 450
    # The control: with room for all of it, nothing is left over.
    whole = commit_preview(
        git_context(workspace, RecordingSandbox()),
        {"path": "proj", "message": "m"},
        diff_lines=2000,
    )
    assert "+line 499" in whole.diff and whole.more_lines == 0


@pytest.mark.parametrize("path", ["../outside", "-p", ":(top)x"])
def test_paths_the_call_would_refuse_are_refused_by_the_preview(
    workspace: Path, repo: Path, path: str
) -> None:
    with pytest.raises(ToolRefusedError):
        commit_preview(
            git_context(workspace, RecordingSandbox()),
            {"path": "proj", "message": "m", "paths": [path]},
        )
    # The control: a plain path is read.
    assert previewed(workspace, {"path": "proj", "message": "m", "paths": ["new.txt"]})[1]


def test_without_commit_access_the_preview_is_refused(workspace: Path, repo: Path) -> None:
    with pytest.raises(ToolRefusedError):
        commit_preview(
            git_context(workspace, RecordingSandbox(), git_access="read_and_branch"),
            {"path": "proj", "message": "m"},
        )
