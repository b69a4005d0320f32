"""A stdio server keeps working while the sandbox user runs many processes elsewhere,
and is held to its own process ceiling.

RLIMIT_NPROC counts every process and thread of a user, across all its sandboxes:
other agents' calls (a parallel build, hundreds of sleeping calls) run as the same
sandbox user. A server given a ceiling below what the user already runs cannot start
a thread; the SDK's server needs one to answer a call, and the call fails with
"Connection closed". The server's ceiling leaves room for the user's other sandboxes,
as a call's does (tools_app.sandbox.runner's shared headroom); its own ceiling is the
pids limit of a control group of its own (tools_app.bridge.launch.server_cgroup).
"""

from __future__ import annotations

import pwd
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from common.testing import wait_until
from common.vocabulary.sandbox import DEFAULT_SANDBOX_USER
from tests.tools_app.bridge.bridged import NET_SERVER, bridged_servers, call, server_name
from tools_app.bridge.launch import MAX_PROCESSES
from tools_app.sandbox.linux.limits import count_user_processes
from trust_app.models import Agent

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# More processes of the sandbox user than one server may have on its own.
CROWD = MAX_PROCESSES + 64


@pytest.fixture
def crowd() -> Iterator[int]:
    """``CROWD`` sleeping processes of the sandbox user, as other calls would be."""
    user = pwd.getpwnam(DEFAULT_SANDBOX_USER)
    argv = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups",
            "sleep", "300"]  # fmt: skip
    sleepers = [subprocess.Popen(argv) for _ in range(CROWD)]
    try:
        # Each is the user's once setpriv has switched to it.
        wait_until(
            lambda: count_user_processes(user.pw_uid) >= CROWD, timeout=60, what="the crowd to run"
        )
        yield user.pw_uid
    finally:
        for sleeper in sleepers:
            sleeper.kill()
        for sleeper in sleepers:
            sleeper.wait(timeout=30)


def _answers(settings: Any, tmp_path: Path, agent: Agent, workspace: Path) -> str:
    name = server_name("crowd")
    servers = [{"transport": "stdio", "command": NET_SERVER, "name": name}]
    with bridged_servers(settings, tmp_path, servers):
        outcome, settled, _ = call(
            f"{name}__env", {"name": "PATH"}, agent=agent, workspace=workspace
        )
        assert not outcome.is_error, outcome
        return settled.content


def test_a_server_answers_while_its_user_runs_many_processes_elsewhere(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path, crowd: int
) -> None:
    assert count_user_processes(crowd) >= CROWD  # the attack: the user is past one server's share
    assert "PATH" in _answers(settings, tmp_path, agent, workspace)


def test_the_same_server_answers_on_a_quiet_machine(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path
) -> None:
    # The control: the same call without the crowd.
    assert "PATH" in _answers(settings, tmp_path, agent, workspace)


def _processes(settings: Any, tmp_path: Path, agent: Agent, workspace: Path, count: int) -> str:
    name = server_name("forks")
    servers = [{"transport": "stdio", "command": NET_SERVER, "name": name}]
    with bridged_servers(settings, tmp_path, servers):
        outcome, settled, _ = call(
            f"{name}__processes", {"count": count}, agent=agent, workspace=workspace
        )
        assert not outcome.is_error, outcome
        return settled.content


def test_a_server_is_held_to_its_own_process_ceiling(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path
) -> None:
    # The attack: more children at once than a server may have. Its control group stops it
    # at MAX_PROCESSES (the rlimit, shared with every sandbox of the user, would not).
    answer = _processes(settings, tmp_path, agent, workspace, MAX_PROCESSES + 40)
    started = int(answer.split()[1])
    assert started < MAX_PROCESSES and "REFUSED 11" in answer, answer  # EAGAIN


def test_a_server_starts_children_within_its_ceiling(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path
) -> None:
    # The control: a few children start, all of them.
    assert _processes(settings, tmp_path, agent, workspace, 20) == "STARTED 20"
