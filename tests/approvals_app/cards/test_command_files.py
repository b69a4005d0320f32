"""The files a command's arguments name, on a real directory: each attack (a climb out,
a link out, a link on the path, an absolute path elsewhere) beside the ordinary case."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from approvals_app.cards.command_files import (
    MAX_NAMED,
    command_files,
    command_files_text,
    named_file,
)
from tools_app.builtin.file_system.paths import workspace_roots


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "notes.txt").write_text("notes\n")
    (root / "sub" / "inner.txt").write_text("x" * 1500)
    (tmp_path / "outside.txt").write_text("o" * 4321)
    return root


def roots(workspace: Path) -> tuple[str, ...]:
    return workspace_roots(workspace)


def test_a_plain_file_states_its_size_and_a_climb_out_is_not_looked_at(workspace: Path) -> None:
    inside = named_file(roots(workspace), (), "notes.txt")
    assert (inside.kind, inside.size) == ("file", 6)
    climb = named_file(roots(workspace), (), "../outside.txt")
    assert climb.kind == "outside" and climb.size == 0
    deeper = named_file(roots(workspace), (), "../../etc/passwd")
    assert deeper.kind == "outside"
    # A climb that stays inside is followed as the kernel would: sub/.. is the workspace.
    assert named_file(roots(workspace), (), "sub/../notes.txt").size == 6
    assert named_file(roots(workspace), ("sub",), "../notes.txt").size == 6
    assert named_file(roots(workspace), ("sub",), "../../outside.txt").kind == "outside"


def test_absolute_paths_inside_are_read_and_elsewhere_are_outside(workspace: Path) -> None:
    assert named_file(roots(workspace), (), str(workspace / "sub" / "inner.txt")).size == 1500
    elsewhere = named_file(roots(workspace), (), str(workspace.parent / "outside.txt"))
    assert elsewhere.kind == "outside" and elsewhere.size == 0
    assert named_file(roots(workspace), (), "/etc/passwd").kind == "outside"
    assert named_file(roots(workspace), (), "~/.ssh/id_rsa").kind == "outside"


def test_a_link_is_reported_never_followed_and_where_it_points_is_judged(
    workspace: Path,
) -> None:
    (workspace / "out").symlink_to(workspace.parent / "outside.txt")
    (workspace / "up").symlink_to("../outside.txt")
    (workspace / "near").symlink_to("sub/inner.txt")
    (workspace / "dir-out").symlink_to(workspace.parent)
    out = named_file(roots(workspace), (), "out")
    assert (out.kind, out.link_outside, out.size) == ("link", True, 0)
    assert named_file(roots(workspace), (), "up").link_outside is True
    # The control: a link to a file inside is still a link (not followed), not outside.
    near = named_file(roots(workspace), (), "near")
    assert (near.kind, near.link_outside, near.link_to) == ("link", False, "sub/inner.txt")
    # A link on the path is not walked through: nothing under it is looked at.
    through = named_file(roots(workspace), (), "dir-out/outside.txt")
    assert through.kind == "unreadable" and through.link_outside is True
    assert through.size == 0 and "dir-out on its path is a symbolic link" in through.reason


def test_the_working_directory_can_be_a_link_and_is_not_followed(workspace: Path) -> None:
    (workspace / "away").symlink_to(workspace.parent)
    found = named_file(roots(workspace), ("away",), "outside.txt")
    assert found.kind == "unreadable" and found.size == 0
    assert named_file(roots(workspace), ("sub",), "inner.txt").size == 1500


def test_options_programs_words_and_urls(workspace: Path) -> None:
    found, left = command_files(
        roots(workspace),
        (),
        ["-n", "--output=sub/new.log", "hello", "sub", "https://example.test/a/b", "notes.txt"],
    )
    assert [(f.word, f.kind) for f in found] == [
        ("sub/new.log", "missing"),
        ("sub", "directory"),
        ("notes.txt", "file"),
    ]
    assert left == 0
    text = command_files_text(found, left)
    assert text == (
        "files named in its arguments: sub/new.log: does not exist now; sub: a directory; "
        "notes.txt: a regular file of 6 B"
    )
    assert command_files_text(*command_files(roots(workspace), (), ["-la", "word"])) == (
        "no argument names a file in the workspace"
    )


def test_many_arguments_are_bounded_and_the_rest_counted(workspace: Path) -> None:
    words = [f"file-{n}.txt" for n in range(300)]
    found, left = command_files(roots(workspace), (), words)
    assert len(found) == MAX_NAMED
    assert left == 300 - MAX_NAMED
    assert command_files_text(found, left).endswith(f"; {left} more argument(s) not looked at")


def test_a_special_file_is_named_and_not_opened(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    # Opening a FIFO for reading would block: a stat does not.
    assert named_file(roots(workspace), (), "pipe").kind == "special"
