"""Restricted PATH on directory boundaries; working directories inside the workspace."""

from __future__ import annotations

import os

import pytest

from tools_app.sandbox.errors import SandboxWorkspaceEscapeError
from tools_app.sandbox.paths import (
    DEFAULT_SANDBOX_PATH,
    is_within,
    resolve_cwd,
    resolve_workspace,
    restrict_path,
)


@pytest.mark.parametrize(
    ("path", "prefix", "inside"),
    [
        ("/usr/bin", "/usr/bin", True),
        ("/usr/bin/", "/usr/bin", True),
        ("/usr/bin/x", "/usr/bin", True),
        ("/usr/bin-evil", "/usr/bin", False),
        ("/usr/binx", "/usr/bin", False),
        ("/usr/bin/../../tmp", "/usr/bin", False),
        ("/usr", "/usr/bin", False),
        ("relative/usr/bin", "/usr/bin", False),
    ],
)
def test_is_within_compares_whole_directory_names(path, prefix, inside):
    assert is_within(path, prefix) is inside


def test_restrict_path_drops_relative_spoofed_and_lookalike_entries(tmp_path):
    evil_link = tmp_path / "bin"
    evil_link.symlink_to("/usr/bin")
    spoofed = f".::bin:{tmp_path}:/usr/bin-evil:/usr/bin/../../tmp:/usr/bin:/bin:/usr/bin"
    assert restrict_path(spoofed) == "/usr/bin:/bin"


def test_restrict_path_refuses_a_safe_looking_entry_that_links_outside(tmp_path):
    os.makedirs("/usr/local/bin", exist_ok=True)
    link = "/usr/local/bin/synthorg-test-escape"
    os.symlink(str(tmp_path), link)
    try:
        assert restrict_path(f"{link}:/usr/bin") == "/usr/bin"
    finally:
        os.unlink(link)


def test_restrict_path_falls_back_to_the_default_and_honours_extra_prefixes(tmp_path):
    assert restrict_path("relative:.") == DEFAULT_SANDBOX_PATH
    assert restrict_path(None) == DEFAULT_SANDBOX_PATH
    tools = tmp_path / "tools"
    tools.mkdir()
    assert restrict_path(f"{tools}:/usr/bin", safe_prefixes=[str(tmp_path)]) == f"{tools}"


def test_cwd_resolution_stays_inside_the_workspace(tmp_path):
    ws = resolve_workspace(tmp_path)
    (ws / "a" / "b").mkdir(parents=True)
    assert resolve_cwd(ws, ".") == ws
    assert resolve_cwd(ws, "a/b/..") == ws / "a"
    assert resolve_cwd(ws, str(ws / "a")) == ws / "a"
    (ws / "inner-link").symlink_to(ws / "a")
    assert resolve_cwd(ws, "inner-link") == ws / "a"
    for escape in ("..", "a/../..", "/", "/etc", str(ws) + "-sibling"):
        with pytest.raises(SandboxWorkspaceEscapeError):
            resolve_cwd(ws, escape)
    (ws / "out").symlink_to("/etc")
    with pytest.raises(SandboxWorkspaceEscapeError, match="outside the workspace"):
        resolve_cwd(ws, "out")
    (ws / "file").write_text("x")
    with pytest.raises(SandboxWorkspaceEscapeError, match="not a directory"):
        resolve_cwd(ws, "file")


def test_workspace_must_exist(tmp_path):
    with pytest.raises(SandboxWorkspaceEscapeError, match="not an existing directory"):
        resolve_workspace(tmp_path / "missing")
