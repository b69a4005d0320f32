"""The spawn server's standby: a child already in the next call's cgroups, waiting.

Against real processes and cgroups: the command runs as the standby, confined
exactly as a fresh child would be, with its limits; a dead standby is replaced,
and the server's end is the standby's end.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from common.testing import require, wait_until
from tests.tools_app.sandbox.spawn.test_client import _alive
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.linux import cgroup_pool
from tools_app.sandbox.linux.cgroups import detect_cgroup_support
from tools_app.sandbox.protocol import MIB, KilledBy, Limits, SandboxSpec, WorkspaceMount
from tools_app.sandbox.spawn import client as spawn_module

# -- the standby: a child already in the next call's cgroups -------------------

CONFINEMENT = (
    "import os, resource as r\n"
    "print(os.getuid(), os.geteuid(), os.getgroups(), os.getcwd(), oct(os.umask(0)))\n"
    "print(os.getpgid(0) == os.getpid() == os.getsid(0), sorted(os.listdir('/proc/self/fd')))\n"
    "print([r.getrlimit(getattr(r, 'RLIMIT_' + n)) for n in ('AS', 'CPU', 'NOFILE', 'NPROC')])\n"
    "groups = [l.split(':', 2) for l in open('/proc/self/cgroup').read().splitlines()]\n"
    "print(sorted(c for _, k, c in groups if k in ('memory', 'pids')))\n"
)


def server_children() -> list[int]:
    """Processes the running spawn servers of this process hold between calls."""
    pids: list[int] = []
    for server in spawn_module._servers.values():
        if server._proc is not None and server._proc.poll() is None:
            path = Path(f"/proc/{server._proc.pid}/task/{server._proc.pid}/children")
            pids += [int(word) for word in path.read_text().split()]
    return pids


def cgroups_of(pid: int) -> list[str]:
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    return sorted(
        line.split(":", 2)[2] for line in lines if line.split(":")[1] in ("memory", "pids")
    )


def _standby_state(pid: int) -> str:
    """What a standby is doing, and whether the pooled groups it was named still exist."""
    proc = Path(f"/proc/{pid}")
    stat = (proc / "stat").read_text()
    comm, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat.rsplit(")", 1)[1].split()
    # Field 52 of stat (the 50th after the name) is the exit status of a process that ended.
    state, exit_code = fields[0], fields[49] if len(fields) > 49 else "?"
    wchan = (proc / "wchan").read_text() if (proc / "wchan").exists() else "?"
    pooled = [
        f"{group.memory_dir.exists()}/{group.pids_dir.exists()}"
        for pool in cgroup_pool._pools.values()
        for group in pool
    ]
    return (
        f"state {state} ({comm}, exit status {exit_code}), wchan {wchan}, in {cgroups_of(pid)}, "
        f"pooled groups exist {pooled}"
    )


def needs_cgroups() -> None:
    require(detect_cgroup_support().available, "a memory and pids cgroup for sandboxed calls")


def _in_a_quiet_child(scenario: Callable[[], None]) -> None:
    """Run ``scenario`` in a forked child of this process, then raise what it raised.

    The child has no other thread: nothing else of the test process (a bridge pool, a
    worker left by another module) makes a sandboxed call meanwhile, which would use
    the pooled group and its standby as any call may. It starts its own spawn server
    (the parent's is forgotten at fork) and pools.
    """
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        outcome = "the scenario did not finish"
        try:
            scenario()
            outcome = "finished"
        except BaseException:  # reported to the parent, which raises
            outcome = traceback.format_exc()
        finally:
            for server in spawn_module._servers.values():
                server.close()
            cgroup_pool.drain_pools()
            with os.fdopen(write, "w") as report:
                report.write(outcome)
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as report:
        outcome = report.read()
    _, status = os.waitpid(pid, 0)
    assert outcome == "finished" and os.waitstatus_to_exitcode(status) == 0, outcome


def test_after_a_call_a_standby_waits_in_the_pooled_cgroups(workspace):
    needs_cgroups()
    _in_a_quiet_child(lambda: _a_standby_waits_in_the_pooled_cgroups(workspace))


def _a_standby_waits_in_the_pooled_cgroups(workspace: Path) -> None:
    sandbox = SubprocessSandbox()
    spec = SandboxSpec(
        argv=("sh", "-c", "echo $$; grep -E ':(memory|pids):' /proc/self/cgroup"),
        workspace=WorkspaceMount(workspace),
    )
    first = sandbox.run(spec)
    wait_until(lambda: len(server_children()) == 1, timeout=10, what="a standby child")
    (standby,) = server_children()
    # Not confined yet: still the worker's user, already in the call's groups (it joins
    # them a moment after it is forked).
    assert f"\nUid:\t{os.getuid()}\t" in Path(f"/proc/{standby}/status").read_text()
    joined = lambda: sum("/call-" in group for group in cgroups_of(standby)) == 2  # noqa: E731
    try:
        wait_until(joined, timeout=10, what="the standby to join the call's groups")
    except AssertionError as failure:
        raise AssertionError(f"{failure}; {_standby_state(standby)}") from None
    waiting_in = cgroups_of(standby)
    assert all("/call-" in group for group in waiting_in) and len(waiting_in) == 2
    time.sleep(0.1)  # a pause, as between an agent's calls
    second = sandbox.run(spec)
    pid, *groups = second.stdout.split()
    # The standby ran it (as the init of the call's pid namespace) and is used up.
    assert int(pid) == 1
    assert not _alive(standby) and standby not in server_children()
    assert sorted(g.split(":", 2)[2] for g in groups) == waiting_in
    assert sorted(g.split(":", 2)[2] for g in first.stdout.split()[1:]) == waiting_in


def test_a_standby_confines_exactly_as_a_fresh_child(workspace):
    needs_cgroups()
    sandbox = SubprocessSandbox(warm_python=False)
    spec = SandboxSpec(argv=("python3", "-c", CONFINEMENT), workspace=WorkspaceMount(workspace))
    sandbox.run(spec)
    wait_until(lambda: len(server_children()) == 1, timeout=10, what="a standby child")
    through_standby = sandbox.run(spec)
    for pid in server_children():  # no standby: the next command is forked afresh
        os.kill(pid, signal.SIGKILL)
    fresh = sandbox.run(spec)
    assert through_standby.exit_code == fresh.exit_code == 0, fresh.stderr
    assert through_standby.stdout == fresh.stdout
    assert "call-" in fresh.stdout


def test_a_standby_killed_while_waiting_is_replaced(workspace):
    needs_cgroups()
    sandbox = SubprocessSandbox()
    spec = SandboxSpec(argv=("echo", "still works"), workspace=WorkspaceMount(workspace))
    for _ in range(3):
        assert sandbox.run(spec).stdout == "still works\n"
        wait_until(lambda: len(server_children()) == 1, timeout=10, what="a standby child")
        for pid in server_children():
            os.kill(pid, signal.SIGKILL)
    assert sandbox.run(spec).stdout == "still works\n"


def test_limits_hold_for_a_command_run_by_a_standby(workspace):
    needs_cgroups()
    sandbox = SubprocessSandbox(warm_python=False)
    first = SandboxSpec(argv=("true",), workspace=WorkspaceMount(workspace))
    bomb = SandboxSpec(
        argv=("python3", "-c", "b = []\nwhile True: b.append(bytearray(8 << 20))"),
        workspace=WorkspaceMount(workspace),
        limits=Limits(memory_bytes=64 * MIB),
    )
    sandbox.run(first)
    wait_until(lambda: len(server_children()) == 1, timeout=10, what="a standby child")
    (standby,) = server_children()
    result = sandbox.run(bomb)
    assert result.killed_by is KilledBy.MEMORY
    assert not _alive(standby)


def test_closing_the_server_ends_its_standby(workspace):
    needs_cgroups()
    SubprocessSandbox().run(SandboxSpec(argv=("true",), workspace=WorkspaceMount(workspace)))
    wait_until(lambda: len(server_children()) == 1, timeout=10, what="a standby child")
    (standby,) = server_children()
    for server in list(spawn_module._servers.values()):
        server.close()
    wait_until(lambda: not _alive(standby), timeout=10, what="the standby to end")
