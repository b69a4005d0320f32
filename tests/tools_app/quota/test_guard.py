"""The workspace quota against real tools on real backends.

Each attack tries to fill the workspace past a small quota (one file that never
ends, many files, an append to an existing file, repeated file writes); each has
a control beside it: a write under the quota works and stays.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tools_app.builtin.fs_fixtures import grant, make_context
from tests.tools_app.sandbox.backends.docker.test_backend import SETTINGS
from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolOutcome, ToolRefusedError
from tools_app.builtin.file_system.tools import TOOLS as FILE_TOOLS
from tools_app.builtin.terminal import tools as terminal
from tools_app.quota.guard import (
    SandboxQuotaExceededError,
    SandboxWorkspaceBusyError,
    WorkspaceQuotaGuard,
    workspace_turn,
)
from tools_app.quota.usage import workspace_usage
from tools_app.sandbox.backends.docker.backend import DockerSandbox
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


def test_two_writing_calls_at_once_never_share_the_rest_of_the_quota(
    workspace: Path, ns_backend: Any
) -> None:
    """Each writes 700 kB into a 1 MiB quota: one fits, the other meets the quota."""
    guarded = WorkspaceQuotaGuard(ns_backend, quota_bytes=QUOTA)
    outcomes: dict[str, str] = {}

    def write(name: str) -> None:
        spec = SandboxSpec(
            argv=("sh", "-c", f"head -c 700000 /dev/zero > {name} && echo wrote-{name}"),
            workspace=WorkspaceMount(workspace, MountMode.READ_WRITE),
        )
        try:
            result = guarded.run(spec)
            outcomes[name] = result.stdout + result.stderr
        except SandboxQuotaExceededError as exc:
            outcomes[name] = exc.reason

    threads = [threading.Thread(target=write, args=(name,)) for name in ("a.bin", "b.bin")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wrote = [name for name, text in outcomes.items() if f"wrote-{name}" in text]
    assert len(wrote) == 1, outcomes  # exactly one fitted, and it was left alone
    assert (workspace / wrote[0]).stat().st_size == 700000
    (other,) = set(outcomes) - set(wrote)
    assert "QUOTA_EXCEEDED" in outcomes[other], outcomes
    assert workspace_usage(workspace).total <= QUOTA


def test_a_writing_call_waits_for_its_turn_and_says_so_when_it_cannot(
    workspace: Path, ns_backend: Any
) -> None:
    guarded = WorkspaceQuotaGuard(ns_backend, quota_bytes=QUOTA, lock_wait_seconds=0.5)
    spec = SandboxSpec(
        argv=("sh", "-c", "echo turn > turn.txt"),
        workspace=WorkspaceMount(workspace, MountMode.READ_WRITE),
    )
    with workspace_turn(workspace, 1):  # another writing call holds the workspace
        with pytest.raises(SandboxWorkspaceBusyError) as busy:
            guarded.run(spec)
        assert "workspace_lock_wait_seconds" in busy.value.reason
        assert not (workspace / "turn.txt").exists()
        read = SandboxSpec(argv=("cat", "hello.txt"), workspace=WorkspaceMount(workspace))
        assert guarded.run(read).stdout  # reads do not wait for a turn
    assert guarded.run(spec).exit_code == 0  # control: once it is free the call runs
    assert (workspace / "turn.txt").read_text() == "turn\n"
