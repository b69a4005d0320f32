"""The workspace's entry limit: many empty files, directories or links, each one an entry.

A real namespace sandbox behind the guard with a small entry limit (and no byte
quota, so only the entries can stop a call): a call that creates more entries than
are left is undone until the workspace fits and fails naming the limit; the
control beside each, a call that stays under the limit, keeps what it made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.tools_app.builtin.fs_fixtures import grant
from tools_app.quota.guard import (
    ENTRIES_SETTING,
    SandboxQuotaExceededError,
    WorkspaceQuotaGuard,
)
from tools_app.quota.usage import workspace_usage
from tools_app.sandbox.protocol import MountMode, SandboxResult, SandboxSpec, WorkspaceMount

LIMIT = 100
MAKE_FILES = (
    "import sys\nfor i in range(int(sys.argv[1])):\n    open(f'{sys.argv[2]}{i}', 'w').close()\n"
)
MAKE_DIRS = "import os, sys\nfor i in range(int(sys.argv[1])):\n    os.mkdir(f'{sys.argv[2]}{i}')\n"
MAKE_TREE = (
    "import os, sys\n"
    "for i in range(int(sys.argv[1])):\n"
    "    os.makedirs(f'tree/d{i}')\n"
    "    open(f'tree/d{i}/f', 'w').close()\n"
    "    os.symlink('f', f'tree/d{i}/link')\n"
)


def run(guarded: WorkspaceQuotaGuard, workspace: Path, code: str, *args: str) -> SandboxResult:
    spec = SandboxSpec(
        argv=("python3", "-c", code, *args),
        workspace=WorkspaceMount(workspace, MountMode.READ_WRITE),
        timeout_seconds=60,
    )
    return guarded.run(spec)


@pytest.fixture
def guarded(ns_backend: Any) -> WorkspaceQuotaGuard:
    return WorkspaceQuotaGuard(ns_backend, quota_bytes=None, quota_entries=LIMIT)


def test_control_files_under_the_limit_stay(workspace: Path, guarded: WorkspaceQuotaGuard) -> None:
    result = run(guarded, workspace, MAKE_FILES, "60", "kept")
    assert result.exit_code == 0, result
    assert len(list(workspace.glob("kept*"))) == 60
    assert workspace_usage(workspace).entries == 61  # and hello.txt


@pytest.mark.parametrize(
    ("code", "count", "made"),
    [(MAKE_FILES, "300", "empty files"), (MAKE_DIRS, "300", "directories"),
     (MAKE_TREE, "80", "directories, files and links")],
)  # fmt: skip
def test_a_call_over_the_entry_limit_is_undone_and_names_it(
    workspace: Path, guarded: WorkspaceQuotaGuard, code: str, count: str, made: str
) -> None:
    assert run(guarded, workspace, MAKE_FILES, "40", "kept").exit_code == 0  # control
    with pytest.raises(SandboxQuotaExceededError) as over:
        run(guarded, workspace, code, count, "e")
    reason = over.value.reason
    assert reason.startswith("QUOTA_EXCEEDED"), reason
    assert f"over its limit of {LIMIT} entries ({ENTRIES_SETTING})" in reason, made
    assert f"{LIMIT - 41} were free before it" in reason
    usage = workspace_usage(workspace)
    assert usage.entries <= LIMIT, (made, usage.entries)
    # What was there before the call is untouched.
    assert len(list(workspace.glob("kept*"))) == 40
    assert (workspace / "hello.txt").read_text() == "hello from the workspace\n"
    # Once the agent makes room, a call under the limit works again.
    for path in workspace.glob("kept*"):
        path.unlink()
    assert run(guarded, workspace, MAKE_FILES, "5", "again").exit_code == 0


def test_a_workspace_already_over_the_limit_still_takes_a_call_that_frees_entries(
    workspace: Path, guarded: WorkspaceQuotaGuard
) -> None:
    for i in range(LIMIT + 20):  # the limit was lowered after these were made
        (workspace / f"old{i}").touch()
    grant(workspace)
    freeing = "import os\nfor i in range(30):\n    os.unlink(f'old{i}')\n"
    assert run(guarded, workspace, freeing).exit_code == 0
    assert workspace_usage(workspace).entries == LIMIT + 20 + 1 - 30
    with pytest.raises(SandboxQuotaExceededError):
        run(guarded, workspace, MAKE_FILES, "20", "more")  # 91 + 20: over again
    # Undone until it fits, like the byte quota: the limit is met exactly.
    assert workspace_usage(workspace).entries == LIMIT
    assert len(list(workspace.glob("more*"))) == LIMIT - 91
    assert len(list(workspace.glob("old*"))) == LIMIT + 20 - 30


def test_the_byte_quota_and_the_entry_limit_hold_together(workspace: Path, ns_backend: Any) -> None:
    both = WorkspaceQuotaGuard(ns_backend, quota_bytes=1024 * 1024, quota_entries=LIMIT)
    assert run(both, workspace, MAKE_FILES, "50", "small").exit_code == 0  # control
    with pytest.raises(SandboxQuotaExceededError) as over:
        run(both, workspace, MAKE_FILES, "200", "tiny")
    assert ENTRIES_SETTING in over.value.reason
    assert "(sandboxing.workspace_quota)" not in over.value.reason  # the bytes fit
    assert workspace_usage(workspace).entries <= LIMIT
    assert len(list(workspace.glob("small*"))) == 50
    for path in workspace.glob("tiny*"):
        path.unlink()
    # Two files, each under what is left, together over the byte quota.
    big = "for name in ('a.bin', 'b.bin'):\n    open(name, 'wb').write(bytes(600_000))\n"
    with pytest.raises(SandboxQuotaExceededError) as too_big:
        run(both, workspace, big)
    assert "(sandboxing.workspace_quota)" in too_big.value.reason
    assert ENTRIES_SETTING not in too_big.value.reason  # one entry more fits
