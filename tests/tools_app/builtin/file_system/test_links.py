"""The hard-link scan shell_command runs before starting anything."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools_app.builtin.file_system.links import WorkspaceUncheckableError, multiply_linked


def test_a_linked_file_is_found_however_deep(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "a" / "b").mkdir(parents=True)
    (workspace / "a" / "b" / "plain").write_text("p")
    outside = tmp_path / "outside"
    outside.write_text("o")
    assert multiply_linked(str(workspace), max_entries=100) == []  # control: nothing linked
    os.link(outside, workspace / "a" / "b" / "deep")
    assert multiply_linked(str(workspace), max_entries=100) == ["a/b/deep"]


def test_symlinks_are_not_followed_out_of_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x").write_text("x")
    os.link(elsewhere / "x", elsewhere / "y")
    (workspace / "door").symlink_to(elsewhere)
    assert multiply_linked(str(workspace), max_entries=100) == []


def test_a_workspace_too_large_to_check_is_refused(tmp_path: Path) -> None:
    for index in range(5):
        (tmp_path / f"f{index}").write_text("x")
    assert multiply_linked(str(tmp_path), max_entries=5) == []
    with pytest.raises(WorkspaceUncheckableError, match="more than 4 entries"):
        multiply_linked(str(tmp_path), max_entries=4)
