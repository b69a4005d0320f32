"""Reading the current file for a card's diff: confined to the workspace, no links followed."""

from __future__ import annotations

import os
from pathlib import Path

from approvals_app.cards.workspace import read_current_file

MAX = 1024


def test_a_file_in_the_workspace_is_read(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("print(1)\n")
    current = read_current_file(str(tmp_path), "src/a.py", max_bytes=MAX)
    assert current.status == "read" and current.text == "print(1)\n"


def test_a_missing_file_is_missing(tmp_path: Path) -> None:
    assert read_current_file(str(tmp_path), "new/b.py", max_bytes=MAX).status == "missing"


def test_a_symlink_to_a_file_outside_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("console secret\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "link.txt").symlink_to(outside)
    (workspace / "dir").symlink_to(tmp_path)
    (workspace / "plain.txt").write_text("ok\n")
    for path in ("link.txt", "dir/outside.txt"):
        current = read_current_file(str(workspace), path, max_bytes=MAX)
        assert current.status == "unreadable" and "symbolic link" in current.reason
        assert "console secret" not in current.text
    # Positive control: a plain file beside them is read.
    assert read_current_file(str(workspace), "plain.txt", max_bytes=MAX).text == "ok\n"


def test_paths_leaving_the_workspace_or_under_the_credentials_floor_are_not_read(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".ssh").mkdir()
    (workspace / ".ssh" / "id_rsa").write_text("KEY\n")
    (tmp_path / "other.txt").write_text("other\n")
    for path in ("../other.txt", str(tmp_path / "other.txt"), ".ssh/id_rsa", "/etc/passwd"):
        current = read_current_file(str(workspace), path, max_bytes=MAX)
        assert current.status == "unreadable", path
        assert current.text == ""


def test_large_binary_special_and_hard_linked_files_are_not_read(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * (MAX + 1))
    (tmp_path / "bin.dat").write_bytes(b"\xff\xfe\x00")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "one.txt").write_text("one\n")
    os.link(tmp_path / "one.txt", tmp_path / "two.txt")
    reasons = {
        name: read_current_file(str(tmp_path), name, max_bytes=MAX).reason
        for name in ("big.txt", "bin.dat", "pipe", "one.txt")
    }
    assert "over the" in reasons["big.txt"]
    assert "UTF-8" in reasons["bin.dat"]
    assert "regular file" in reasons["pipe"]
    assert "hard links" in reasons["one.txt"]
