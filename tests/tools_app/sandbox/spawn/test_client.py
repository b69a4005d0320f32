"""The spawn server and its warm interpreter, against real processes.

Every program runs twice, through the warm interpreter and through a fresh
``python3``, and what a caller sees must be identical; the limits, user and
kill semantics must hold on the warm path too.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from common.testing import require, wait_until
from tests.tools_app.sandbox.proc import processes_with_marker
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.protocol import (
    MIB,
    KilledBy,
    Limits,
    MountMode,
    SandboxSpec,
    WorkspaceMount,
)
from tools_app.sandbox.spawn.client import ExecFailure, Spawned, spawn_server

WARM = ("python3", "-I", "-S", "-c")

PROGRAMS = {
    "argv_env_and_identity": (
        "import os, sys\n"
        "print(sys.argv)\n"
        "print(sorted((k, v) for k, v in os.environ.items() if k not in ('HOME', 'TMPDIR')))\n"
        "print(os.environ['HOME'] == os.environ['TMPDIR'], os.listdir(os.environ['HOME']))\n"
        "print(os.getuid(), os.geteuid(), os.getgid(), os.getgroups(), os.getcwd())\n"
        "print(os.getpgid(0) == os.getpid() == os.getsid(0))\n"
    ),
    "limits_and_umask": (
        "import os, resource as r\n"
        "names = ('AS', 'CPU', 'FSIZE', 'NOFILE', 'CORE', 'NPROC')\n"
        "print([r.getrlimit(getattr(r, 'RLIMIT_' + n)) for n in names])\n"
        "print(oct(os.umask(0)))\n"
    ),
    "descriptors": "import os\nprint(sorted(os.listdir('/proc/self/fd')))\n",
    "streams": (
        "import sys\n"
        "data = sys.stdin.read()\n"
        "print(data.upper())\n"
        "for s in (sys.stdin, sys.stdout, sys.stderr):\n"
        "    print(s.name, s.encoding, s.errors, s.line_buffering, s.buffer.raw.name)\n"
        "print('to stderr', file=sys.stderr)\n"
    ),
    "interpreter": (
        "import sys\n"
        "print(sys.flags.isolated, sys.flags.no_site, sys.path, sys.executable, sys.argv)\n"
        "print(__name__, sorted(globals()), __spec__, __package__, __loader__)\n"
    ),
    "signals": (
        "import signal\n"
        "print([signal.getsignal(s) for s in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT)])\n"
    ),
    "exit_code": "import sys\nprint('partial', end='')\nsys.exit(7)\n",
    "exit_message": "import sys\nsys.exit('gone wrong')\n",
    "exit_none": "raise SystemExit\n",
    "exit_large": "import sys\nsys.exit(300)\n",
    "uncaught": "def f():\n    raise ValueError('boom')\n\nf()\n",
    "atexit_runs": "import atexit\natexit.register(print, 'at exit')\nprint('body')\n",
    "unflushed_output": "import sys\nsys.stdout.write('no newline, never flushed')\n",
    "killed_by_signal": "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n",
    "spawns_a_program": (
        "import subprocess\nprint(subprocess.run(['id', '-u'], capture_output=True).stdout)\n"
    ),
    "syntax_error": "def broken(:\n",
}


@pytest.fixture(scope="module")
def backends() -> tuple[SubprocessSandbox, SubprocessSandbox]:
    return SubprocessSandbox(warm_python=True), SubprocessSandbox(warm_python=False)


def both(backends, workspace: Path, argv: tuple[str, ...], **kwargs: object):
    warm, cold = backends
    spec = SandboxSpec(argv=argv, workspace=WorkspaceMount(workspace), **kwargs)  # type: ignore[arg-type]
    return warm.run(spec), cold.run(spec)


def seen(result) -> tuple[object, ...]:
    return (result.exit_code, result.stdout, result.stderr, result.killed_by, result.truncated)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_warm_interpreter_matches_a_fresh_one(backends, workspace, name):
    argv = (*WARM, PROGRAMS[name], "first arg", "--second")
    warm, cold = both(backends, workspace, argv, stdin=b"fed through stdin\n", env={"X": "1"})
    assert seen(warm) == seen(cold)
    assert cold.log_metadata.get("warm_python") is None
    expected_warm = name != "syntax_error"  # source that does not compile runs cold
    assert bool(warm.log_metadata.get("warm_python")) is expected_warm


def test_warm_interpreter_with_empty_stdin_and_no_arguments(backends, workspace):
    argv = (*WARM, "import sys\nprint(repr(sys.stdin.read()), sys.argv)")
    warm, cold = both(backends, workspace, argv)
    assert seen(warm) == seen(cold) == (0, "'' ['-c']\n", "", None, False)


def test_only_the_exact_isolated_form_runs_warm(backends, workspace):
    for argv in (("python3", "-c", "pass"), ("python3", "-S", "-I", "-c", "pass")):
        warm, cold = both(backends, workspace, argv)
        assert seen(warm) == seen(cold)
        assert "warm_python" not in warm.log_metadata


def test_warm_runs_are_independent(backends, workspace):
    script = "import sys\nprint(getattr(sys, 'left_here', None))\nsys.left_here = 1"
    warm, _ = backends
    spec = SandboxSpec(argv=(*WARM, script), workspace=WorkspaceMount(workspace))
    outputs = {warm.run(spec).stdout for _ in range(3)}
    assert outputs == {"None\n"}


# -- the same limits on the warm path ------------------------------------------


def warm_run(workspace: Path, source: str, *, writable: bool = False, **kwargs: object):
    mode = MountMode.READ_WRITE if writable else MountMode.READ_ONLY
    mount = WorkspaceMount(workspace, mode)
    spec = SandboxSpec(argv=(*WARM, source), workspace=mount, **kwargs)  # type: ignore[arg-type]
    result = SubprocessSandbox().run(spec)
    assert result.log_metadata.get("warm_python") is True
    return result


def test_warm_memory_bomb_is_killed(workspace):
    bomb = "hog = []\nwhile True:\n    hog.append(bytearray(8 * 1024 * 1024))\n"
    result = warm_run(workspace, bomb, limits=Limits(memory_bytes=128 * MIB), timeout_seconds=60)
    assert result.killed_by is KilledBy.MEMORY and not result.timed_out


def test_warm_cpu_limit_ends_a_busy_loop(workspace):
    result = warm_run(
        workspace, "while True: pass", limits=Limits(cpu_seconds=1), timeout_seconds=60
    )
    assert result.killed_by is KilledBy.CPU_TIME and not result.timed_out


def test_warm_output_flood_is_truncated(workspace):
    flood = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"
    result = warm_run(workspace, flood, limits=Limits(output_bytes=64 * 1024))
    assert result.killed_by is KilledBy.OUTPUT_LIMIT and result.stdout_truncated


def test_warm_timeout_kills_the_command_and_what_it_forked(workspace):
    # Pids inside the command's pid namespace are not the host's: the escaped
    # children carry a marker in their command line, visible from the host.
    marker = f"warm-escaped-{uuid.uuid4().hex}"
    script = (
        "import os\n"
        "for _ in range(3):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        open(f'started-{os.getpid()}', 'w').close()\n"
        f"        os.execv('/bin/sh', ['sh', '-c', 'while :; do :; done', '{marker}'])\n"
        "while True: pass\n"
    )
    result = warm_run(workspace, script, timeout_seconds=2, writable=True)
    assert result.killed_by is KilledBy.TIMEOUT
    assert len(list(workspace.glob("started-*"))) == 3
    assert processes_with_marker(marker) == []


def test_warm_fork_bomb_is_contained(workspace):
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    result = warm_run(
        workspace, bomb, limits=Limits(max_processes=32, cpu_seconds=20), timeout_seconds=3
    )
    assert result.killed_by is KilledBy.TIMEOUT
    after = warm_run(workspace, "print('still here')")
    assert after.stdout == "still here\n"


def test_commands_cannot_signal_the_spawn_server(backends, workspace):
    require(os.geteuid() == 0, "running as root (the server keeps the worker's user)")
    both(backends, workspace, ("true",))
    server = server_pid()
    # Each command is its own pid namespace's init: the server is not even
    # visible (no parent, its host pid names nothing or another of the call's).
    script = (
        f"import os\nprint(os.getpid(), os.getppid())\ntry:\n    os.kill({server}, 9)\n"
        "except OSError as e:\n    print(type(e).__name__)\n"
    )
    for result in both(backends, workspace, (*WARM, script)):
        assert result.stdout == "1 0\nProcessLookupError\n"
    shell = both(backends, workspace, ("sh", "-c", f"kill -9 {server} 2>/dev/null || echo refused"))
    assert [r.stdout for r in shell] == ["refused\n", "refused\n"]
    assert server_pid() == server and _alive(server)


# -- the server itself ---------------------------------------------------------


def call(spec_argv: tuple[str, ...], workspace: Path) -> str:
    spec = SandboxSpec(argv=spec_argv, workspace=WorkspaceMount(workspace))
    return SubprocessSandbox().run(spec).stdout


def server_pid() -> int:
    server = spawn_server({"LANG": "C.UTF-8"})
    assert server._proc is not None
    return server._proc.pid


def test_a_killed_server_is_started_again(workspace):
    assert call(("echo", "one"), workspace) == "one\n"
    first = server_pid()
    os.kill(first, signal.SIGKILL)
    server = spawn_server({"LANG": "C.UTF-8"})
    assert server._proc is not None
    server._proc.wait()  # died between calls
    assert call(("echo", "two"), workspace) == "two\n"
    assert server_pid() != first


def test_a_server_started_under_a_default_socket_timeout_still_waits_for_calls(workspace):
    # Celery sets a process-wide default socket timeout while a worker shuts down warm;
    # a server started then must not inherit a non-blocking socket (it would die at
    # its first wait for a request, failing the calls still running).
    call(("true",), workspace)
    before = server_pid()
    os.kill(before, signal.SIGKILL)
    server = spawn_server({"LANG": "C.UTF-8"})
    assert server._proc is not None
    server._proc.wait()
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(0.2)
    try:
        assert call(("echo", "started"), workspace) == "started\n"
    finally:
        socket.setdefaulttimeout(previous)
    started = server_pid()
    assert started != before
    time.sleep(1.0)  # idle past the default timeout: the server waits, it does not fail
    assert call(("echo", "later"), workspace) == "later\n"
    assert server_pid() == started


def test_a_forked_worker_uses_its_own_server(workspace):
    call(("true",), workspace)
    parent_server = server_pid()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked worker
        try:
            out = call(("echo", "from the child"), workspace)
            os.write(write, f"{out.strip()}|{server_pid()}".encode())
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 4096).decode()
    os.close(read)
    os.waitpid(child, 0)
    text, child_server = answer.split("|")
    assert text == "from the child"
    assert int(child_server) != parent_server
    assert call(("echo", "parent"), workspace) == "parent\n"
    assert server_pid() == parent_server


def test_server_holds_no_descriptors_between_calls(workspace):
    call(("true",), workspace)
    before = settled_descriptor_count(server_pid())
    for index in range(30):
        argv = (*WARM, "print(1)") if index % 2 else ("sh", "-c", "echo 1")
        assert call(argv, workspace) == "1\n"
    assert settled_descriptor_count(server_pid()) == before


def settled_descriptor_count(pid: int) -> int:
    """The server's open descriptors once it is idle (the one-way ``prepare`` that
    follows a call opens and closes a socket pair)."""
    counts: list[int] = []

    def stable() -> bool:
        counts.append(len(os.listdir(f"/proc/{pid}/fd")))
        return len(counts) >= 3 and counts[-1] == counts[-2] == counts[-3]

    wait_until(stable, timeout=10, what="the spawn server to be idle", poll=0.05)
    return counts[-1]


def test_threads_share_one_server(workspace):
    results: list[str] = []

    def work(n: int) -> None:
        for i in range(5):
            results.append(call(("echo", f"{n}-{i}"), workspace).strip())

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == sorted(f"{n}-{i}" for n in range(4) for i in range(5))


def test_closing_the_server_kills_the_commands_it_started(workspace):
    server = spawn_server({"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"})
    read, write = os.pipe()
    try:
        spawned = server.spawn(
            ["sleep", "60"],
            env={"PATH": "/usr/bin:/bin"},
            cwd=str(workspace),
            fds=[write, write],
            stdin=False,
            rlimits=[],
            uid=os.getuid(),
            gid=os.getgid(),
            switch=False,
            cgroup_procs=[],
            warm=False,
        )
    finally:
        os.close(write)
    assert isinstance(spawned, Spawned)
    pidfd = os.pidfd_open(spawned.pid)
    try:
        server.close()
        ready, _, _ = select.select([pidfd], [], [], 30)
        assert ready, "the command outlived its spawn server"
    finally:
        os.close(pidfd)
        os.close(read)


def test_a_missing_program_is_reported_not_started(workspace):
    server = spawn_server({"LANG": "C.UTF-8"})
    read, write = os.pipe()
    try:
        outcome = server.spawn(
            ["no-such-program-anywhere"],
            env={"PATH": "/usr/bin:/bin"},
            cwd=str(workspace),
            fds=[write, write],
            stdin=False,
            rlimits=[],
            uid=os.getuid(),
            gid=os.getgid(),
            switch=False,
            cgroup_procs=[],
            warm=False,
        )
    finally:
        os.close(write)
        os.close(read)
    assert isinstance(outcome, ExecFailure) and outcome.errno == 2


def test_no_process_is_left_after_many_warm_calls(workspace):
    for _ in range(50):
        # The init of its own pid namespace, not the server answering itself.
        assert call((*WARM, "import os\nprint(os.getpid() == 1)"), workspace) == "True\n"
    settled_descriptor_count(server_pid())
    children = Path(f"/proc/{server_pid()}/task/{server_pid()}/children").read_text().split()
    # At most the standby for the next call, not yet confined (the worker's user).
    assert len(children) <= 1
    for child in children:
        assert f"\nUid:\t{os.getuid()}\t" in Path(f"/proc/{child}/status").read_text()


# -- the file tools' runner, the warm path's main user ---------------------------

FS_REQUESTS: dict[str, dict[str, object]] = {
    "read": {"op": "read", "parts": ["hello.txt"], "offset": 0, "length": 1000},
    "read_missing": {"op": "read", "parts": ["absent.txt"], "offset": 0, "length": 10},
    "read_escaping_link": {"op": "read", "parts": ["leak"], "offset": 0, "length": 100},
    "list": {"op": "list", "parts": [], "max_entries": 100},
    "stat": {"op": "stat", "parts": ["hello.txt"]},
    "denied": {"op": "read", "parts": [".git", "config"], "offset": 0, "length": 10},
    "malformed": {"op": "nonsense", "parts": []},
}


@pytest.mark.parametrize("name", sorted(FS_REQUESTS))
def test_file_runner_answers_the_same_warm_and_cold(backends, workspace, outside_dir, name):
    import json

    from tools_app.builtin.file_system.execution import RUNNER_ARGV

    (workspace / "leak").symlink_to(outside_dir / "secret.txt")
    request: dict[str, object] = {"anchor": "workspace", "floor": [".git"], **FS_REQUESTS[name]}
    stdin = json.dumps(request).encode()
    warm, cold = both(backends, workspace, RUNNER_ARGV, stdin=stdin)
    assert seen(warm) == seen(cold)
    assert warm.log_metadata.get("warm_python") is True
    answer = json.loads(warm.stdout)
    assert answer["ok"] is (name in ("read", "list", "stat"))
    assert "top secret" not in warm.stdout


def test_file_runner_writes_the_same_warm_and_cold(backends, workspace):
    import json

    from tools_app.builtin.file_system.execution import RUNNER_ARGV

    for backend, target in zip(backends, ("warm.txt", "cold.txt"), strict=True):
        request = {
            "op": "write",
            "anchor": "workspace",
            "floor": [],
            "parts": ["sub", target],
            "content": "written\n",
            "overwrite": True,
            "create_parents": True,
        }
        spec = SandboxSpec(
            argv=RUNNER_ARGV,
            workspace=WorkspaceMount(workspace, MountMode.READ_WRITE),
            stdin=json.dumps(request).encode(),
        )
        result = backend.run(spec)
        assert json.loads(result.stdout)["ok"] is True, result
    warm_file, cold_file = workspace / "sub" / "warm.txt", workspace / "sub" / "cold.txt"
    assert warm_file.read_text() == cold_file.read_text() == "written\n"
    assert (warm_file.stat().st_uid, warm_file.stat().st_mode) == (
        cold_file.stat().st_uid,
        cold_file.stat().st_mode,
    )


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
