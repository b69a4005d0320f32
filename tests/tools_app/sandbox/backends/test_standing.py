"""Standing runners of the subprocess backend, against real confined processes.

Each attack has its positive control beside it: a runner answers the same agent's
next call (control), and never another agent's, another workspace's, a writing
call's; what a call leaves behind dies with its runner; a runner that runs out of
time, says too much, or dies is never asked again.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.testing import wait_until
from tests.tools_app.sandbox.conftest import make_workspace
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.protocol import (
    KilledBy,
    Limits,
    MountMode,
    Owner,
    SandboxResult,
    SandboxSpec,
    WorkspaceMount,
)
from tools_app.sandbox.standing import StandingLimits

# Answers one JSON line per request line; each runner names itself with a random id.
ANSWERER = r"""
import json, os, sys, time
me = os.urandom(8).hex()
for line in sys.stdin.buffer:
    req = json.loads(line)
    op, out = req["op"], {}
    if op == "sleep":
        time.sleep(req["seconds"])
    elif op == "flood":
        sys.stdout.write("x" * req["bytes"])
        sys.stdout.flush()
        time.sleep(60)
    elif op == "die":
        os._exit(3)
    elif op == "leave":
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", req["marker"]])
    elif op == "write":
        try:
            with open(req["path"], "w") as f:
                f.write("x")
            out["wrote"] = True
        except OSError as exc:
            out["error"] = exc.strerror
    elif op == "read":
        with open(req["path"]) as f:
            out["text"] = f.read()
    out["me"] = me
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""
ARGV = ("python3", "-I", "-S", "-c", ANSWERER)


@pytest.fixture
def backend() -> Iterator[SubprocessSandbox]:
    sandbox = SubprocessSandbox(standing=StandingLimits(capacity=4, idle_seconds=1.0))
    yield sandbox
    sandbox.close()


@pytest.fixture
def reading_workspace() -> Iterator[Path]:
    path = make_workspace(writable=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _spec(
    workspace: Path,
    request: dict[str, object],
    *,
    agent: str = "agent-a",
    mode: MountMode = MountMode.READ_ONLY,
    timeout: float = 10.0,
    output_bytes: int = 64 * 1024,
) -> SandboxSpec:
    return SandboxSpec(
        argv=ARGV,
        workspace=WorkspaceMount(workspace, mode),
        stdin=json.dumps(request).encode(),
        timeout_seconds=timeout,
        limits=Limits(output_bytes=output_bytes),
        owner=Owner(agent_id=agent),
        answers_lines=True,
    )


def _ask(backend: SubprocessSandbox, spec: SandboxSpec) -> tuple[SandboxResult, dict[str, object]]:
    result = backend.run(spec)
    assert result.exit_code == 0, result
    return result, json.loads(result.stdout)


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if marker.encode() in argv:
                found.append(int(entry.name))
    return found


def test_the_same_agents_next_read_is_answered_by_its_standing_runner(backend, reading_workspace):
    first, a = _ask(backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}))
    second, b = _ask(backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}))
    assert a["text"] == b["text"] == "hello from the workspace\n"
    assert a["me"] == b["me"]
    assert first.log_metadata["served"] == 1 and second.log_metadata["served"] == 2
    assert backend.standing_runners == 1


def test_another_agent_never_shares_a_runner(backend, reading_workspace):
    _, mine = _ask(backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}))
    _, again = _ask(backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}))
    _, theirs = _ask(
        backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}, agent="agent-b")
    )
    assert mine["me"] == again["me"]  # control
    assert theirs["me"] != mine["me"]


def test_a_workspace_made_again_at_the_same_path_gets_a_new_runner(backend, reading_workspace):
    _, before = _ask(backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}))
    moved = reading_workspace.with_name(reading_workspace.name + "-old")
    reading_workspace.rename(moved)
    try:
        reading_workspace.mkdir(mode=0o755)
        (reading_workspace / "hello.txt").write_text("the new workspace\n")
        os.chmod(reading_workspace / "hello.txt", 0o644)
        _, after = _ask(backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}))
    finally:
        shutil.rmtree(moved, ignore_errors=True)
    assert after["text"] == "the new workspace\n"
    assert after["me"] != before["me"]


def test_a_reading_runner_cannot_write_and_a_writing_call_has_a_runner_of_its_own(
    backend, reading_workspace
):
    _, refused = _ask(backend, _spec(reading_workspace, {"op": "write", "path": "new.txt"}))
    assert refused["error"] == "Read-only file system"
    assert not (reading_workspace / "new.txt").exists()
    # Control: the same request on a writable mount writes, in a runner of its own.
    rw = _spec(reading_workspace, {"op": "write", "path": "new.txt"}, mode=MountMode.READ_WRITE)
    _, wrote = _ask(backend, rw)
    assert wrote["wrote"] is True and (reading_workspace / "new.txt").exists()
    assert wrote["me"] != refused["me"]
    # The writing runner stands for the next writing call, and never answers a reading one.
    other: dict[str, object] = {"op": "write", "path": "other.txt"}
    _, second = _ask(backend, _spec(reading_workspace, other, mode=MountMode.READ_WRITE))
    assert second["me"] == wrote["me"] and (reading_workspace / "other.txt").exists()
    _, reading = _ask(backend, _spec(reading_workspace, {"op": "write", "path": "third.txt"}))
    assert reading["me"] == refused["me"] and reading["error"] == "Read-only file system"
    assert not (reading_workspace / "third.txt").exists()


def test_a_call_out_of_time_ends_its_runner_and_what_it_started(backend, reading_workspace):
    marker = f"{4000 + uuid.uuid4().int % 1000}.25"
    _, left = _ask(backend, _spec(reading_workspace, {"op": "leave", "marker": marker}))
    # Control: what it started runs while the runner stands.
    wait_until(lambda: bool(_processes_with(marker)), timeout=10, what="what it started")
    slow = backend.run(_spec(reading_workspace, {"op": "sleep", "seconds": 30}, timeout=1.0))
    assert slow.timed_out and slow.killed_by is KilledBy.TIMEOUT
    assert _processes_with(marker) == []
    _, fresh = _ask(backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}))
    assert fresh["me"] != left["me"]


def test_an_answer_over_the_output_limit_ends_the_runner(backend, reading_workspace):
    _, before = _ask(backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}))
    flood = backend.run(
        _spec(reading_workspace, {"op": "flood", "bytes": 200_000}, output_bytes=65_536)
    )
    assert flood.killed_by is KilledBy.OUTPUT_LIMIT and flood.stdout_truncated
    assert len(flood.stdout) == 65_536
    _, after = _ask(backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}))
    assert after["me"] != before["me"]


def test_a_runner_that_dies_mid_call_reports_it_and_is_replaced(backend, reading_workspace):
    died = backend.run(_spec(reading_workspace, {"op": "die"}))
    assert died.exit_code == 3 and died.stdout == ""
    _, after = _ask(backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}))
    assert after["text"] == "hello from the workspace\n"


def test_a_runner_killed_while_idle_is_replaced_without_failing_the_call(
    backend, reading_workspace
):
    marker = f"{5000 + uuid.uuid4().int % 1000}.5"
    _, before = _ask(backend, _spec(reading_workspace, {"op": "leave", "marker": marker}))
    # Its runner is the parent of what it left: kill the runner from outside.
    wait_until(lambda: bool(_processes_with(marker)), timeout=10, what="what it started")
    (child,) = _processes_with(marker)
    parent = int(Path(f"/proc/{child}/stat").read_text().rpartition(")")[2].split()[1])
    os.kill(parent, signal.SIGKILL)
    _, after = _ask(backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}))
    assert after["text"] == "hello from the workspace\n" and after["me"] != before["me"]
    wait_until(lambda: _processes_with(marker) == [], timeout=10, what="its leftovers to end")


def test_idle_runners_end_and_a_full_pool_runs_calls_on_their_own(reading_workspace):
    backend = SubprocessSandbox(standing=StandingLimits(capacity=1, idle_seconds=0.5))
    try:
        first, _ = _ask(backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}))
        other, _ = _ask(
            backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}, agent="b")
        )
        assert first.log_metadata["standing"] is True
        assert "standing" not in other.log_metadata  # the one place is taken
        wait_until(lambda: backend.standing_runners == 0, timeout=10, what="idle runners to end")
        again, _ = _ask(
            backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}, agent="b")
        )
        assert again.log_metadata["standing"] is True
    finally:
        backend.close()
    assert backend.standing_runners == 0


def test_switched_off_every_call_starts_its_own_process(reading_workspace):
    backend = SubprocessSandbox(standing=StandingLimits(capacity=0))
    for _ in range(2):
        result, _ = _ask(backend, _spec(reading_workspace, {"op": "read", "path": "hello.txt"}))
        assert "standing" not in result.log_metadata
