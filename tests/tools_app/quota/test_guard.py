"""The workspace quota against real tools on real backends.

Each attack tries to fill the workspace past a small quota (one file that never
ends, many files, an append to an existing file, repeated file writes); each has
a control beside it: a write under the quota works and stays.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tools_app.builtin.fs_fixtures import grant, make_context
from tests.tools_app.sandbox.test_docker import SETTINGS
from tools_app.builtin import terminal
from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolOutcome, ToolRefusedError
from tools_app.builtin.file_system import TOOLS as FILE_TOOLS
from tools_app.quota.guard import SandboxQuotaExceededError, WorkspaceQuotaGuard
from tools_app.quota.usage import workspace_usage
from tools_app.sandbox.docker import DockerSandbox
from tools_app.sandbox.protocol import MountMode, SandboxBackend, SandboxSpec, WorkspaceMount

QUOTA = 1024 * 1024
SERIES = " ".join(str(i) for i in range(1, 41))  # the shell check refuses $(seq …)
FILE_TOOL = {tool.contract.name: tool for tool in FILE_TOOLS}
FILL_COMMANDS = {
    "yes": "yes > endless.txt",
    "dd": "dd if=/dev/zero of=big.bin bs=64k count=100",
    "many files": f"for i in {SERIES}; do head -c 100000 /dev/zero > part$i; done",
    "sparse": "truncate -s 10M sparse.bin",  # under the per-file limit, over the quota
}


def shell(workspace: Path, sandbox: SandboxBackend, script: str) -> ToolOutcome:
    """``sh script.sh`` in the workspace, as an agent with terminal ``full`` runs one."""
    (workspace / "script.sh").write_text(script + "\n")
    grant(workspace)
    context = make_context(workspace, sandbox, terminal="full")
    return terminal.shell_command.run(context, {"argv": ["sh", "script.sh"]})


def file_tool(workspace: Path, sandbox: SandboxBackend, name: str, **arguments: Any) -> ToolOutcome:
    context = make_context(workspace, sandbox, file_system="workspace_only")
    return FILE_TOOL[name].run(context, arguments)


@pytest.fixture(params=["namespace", "docker"])
def guarded(request: pytest.FixtureRequest, ns_backend: SandboxBackend) -> Iterator[Any]:
    if request.param == "docker":
        request.getfixturevalue("docker_client")
        inner: SandboxBackend = DockerSandbox(SETTINGS)
    else:
        inner = ns_backend
    yield WorkspaceQuotaGuard(inner, quota_bytes=QUOTA)
    inner.close()


def test_control_a_write_under_the_quota_stays(workspace: Path, guarded: Any) -> None:
    outcome = shell(workspace, guarded, "head -c 200000 /dev/zero > fits.bin && echo written")
    assert "written" in outcome.content and not outcome.is_error
    assert (workspace / "fits.bin").stat().st_size == 200000
    assert workspace_usage(workspace).total <= QUOTA


@pytest.mark.parametrize("attack", sorted(FILL_COMMANDS))
def test_filling_past_the_quota_is_stopped_and_undone(
    workspace: Path, guarded: Any, attack: str
) -> None:
    (workspace / "keep.txt").write_text("kept\n")
    grant(workspace)
    try:
        outcome = shell(workspace, guarded, FILL_COMMANDS[attack])
    except ToolFailedError as failed:
        assert "QUOTA_EXCEEDED" in failed.message and "sandboxing.workspace_quota" in failed.message
    else:
        # Stopped by the file-size limit at the quota, exactly where it ends, and told so.
        assert outcome.is_error and "QUOTA_EXCEEDED" in outcome.content, outcome
    assert workspace_usage(workspace).total <= QUOTA
    assert (workspace / "keep.txt").read_text() == "kept\n"
    assert (workspace / "hello.txt").exists()
    # Once the agent frees space, a write that fits works again.
    shell(workspace, guarded, "rm -f endless.txt big.bin sparse.bin part1 part2 part3")
    after = shell(workspace, guarded, "head -c 1000 /dev/zero > small.bin && echo fine")
    assert "fine" in after.content, after


def test_an_existing_file_grown_past_the_quota_is_cut_back(workspace: Path, guarded: Any) -> None:
    (workspace / "log.txt").write_text("line one\n")
    grant(workspace)
    with pytest.raises(ToolFailedError) as failed:
        shell(
            workspace,
            guarded,
            f"for i in {SERIES}; do head -c 50000 /dev/zero >> log.txt; "
            "head -c 50000 /dev/zero > new$i; done",
        )
    assert "QUOTA_EXCEEDED" in failed.value.message
    assert workspace_usage(workspace).total <= QUOTA
    assert (workspace / "log.txt").read_bytes().startswith(b"line one\n")


def test_file_tools_refuse_before_writing_past_the_quota(
    workspace: Path, subprocess_backend: SandboxBackend
) -> None:
    guarded = WorkspaceQuotaGuard(subprocess_backend, quota_bytes=QUOTA)
    chunk = "x" * 300_000
    written = [
        file_tool(workspace, guarded, "write_file", path=f"f{i}.txt", content=chunk)
        for i in range(3)
    ]
    assert all(not w.is_error for w in written)  # control: 900 kB fit in 1 MiB
    with pytest.raises(ToolRefusedError) as refused:
        file_tool(workspace, guarded, "write_file", path="f3.txt", content=chunk)
    assert refused.value.code is RefusalCode.LIMIT_EXCEEDED
    assert "quota" in refused.value.reason and not (workspace / "f3.txt").exists()
    # A replacement needs room for its new copy beside the old one: a small one fits.
    replaced = file_tool(workspace, guarded, "write_file", path="f0.txt", content="short")
    assert not replaced.is_error and (workspace / "f0.txt").read_text() == "short"
    with pytest.raises(ToolRefusedError):
        file_tool(
            workspace, guarded, "edit_file", path="hello.txt", old_string="hello",
            new_string="y" * 500_000, expected_replacements=1,
        )  # fmt: skip
    assert workspace_usage(workspace).total <= QUOTA
    assert (workspace / "hello.txt").read_text() == "hello from the workspace\n"


def test_a_read_only_call_is_not_measured_or_limited(workspace: Path, ns_backend: Any) -> None:
    guarded = WorkspaceQuotaGuard(ns_backend, quota_bytes=1)
    spec = SandboxSpec(argv=("cat", "hello.txt"), workspace=WorkspaceMount(workspace))
    assert guarded.run(spec).stdout == "hello from the workspace\n"
    writing = SandboxSpec(
        argv=("sh", "-c", "echo more > more.txt"),
        workspace=WorkspaceMount(workspace, MountMode.READ_WRITE),
    )
    with pytest.raises(SandboxQuotaExceededError):
        guarded.run(writing)
    assert not (workspace / "more.txt").exists()
