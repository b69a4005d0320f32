"""A stdio server is held to its memory ceiling, alone and with its children.

A server is not a call: it lives across calls, and nothing of a call's limits bounds
it. Its entry's ``memory_limit`` (else ``sandboxing.namespace.server_memory_limit``) is
the ceiling of its control group, counting every process it starts, with no swap; each
process's writable memory (``RLIMIT_DATA``) is the next wall, and the only one on a
worker without a group. The real server, in the real sandbox, through this process's
warm pool as a worker runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.tools_app.bridge.bridged import NET_SERVER, bridged_servers, call, server_name
from tools_app.bridge import launch as server_launch
from tools_app.builtin.base import ToolFailedError
from trust_app.models import Agent

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CEILING_MIB = 192


def _entry(prefix: str) -> dict[str, Any]:
    return {
        "transport": "stdio",
        "command": NET_SERVER,
        "name": server_name(prefix),
        "memory_limit": f"{CEILING_MIB}m",
    }


def _hold(tool: str, agent: Agent, workspace: Path, **arguments: int) -> tuple[bool, str]:
    """(failed, what the agent is told) of one ``hold_memory`` call."""
    try:
        _, settled, _ = call(f"{tool}__hold_memory", arguments, agent=agent, workspace=workspace)
    except ToolFailedError as exc:
        return True, str(exc)
    return settled.is_error, settled.error_message or settled.content


def test_a_server_filling_memory_is_stopped_at_its_ceiling_and_started_again(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path
) -> None:
    entry = _entry("leak")
    with bridged_servers(settings, tmp_path, [entry]):
        # The control first: what fits is held, and the server keeps it.
        assert _hold(entry["name"], agent, workspace, megabytes=16) == (False, "HELD 16")
        # The attack: more than the ceiling, 8 MiB at a time (under each process's own
        # wall, so the group's ceiling is the one met). The kernel stops the server; the
        # call says why, naming the ceiling.
        failed, said = _hold(entry["name"], agent, workspace, megabytes=CEILING_MIB * 3)
        assert failed, said
        assert f"went over its memory ceiling of {CEILING_MIB} MiB" in said, said
        # The next call starts it again, with its memory back.
        assert _hold(entry["name"], agent, workspace, megabytes=16) == (False, "HELD 16")


def test_children_are_counted_with_the_server(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path
) -> None:
    # The attack: each child stays under every per-process wall, together they do not.
    entry = _entry("fanout")
    each = CEILING_MIB // 2
    with bridged_servers(settings, tmp_path, [entry]):
        # The control: two children of a quarter each fill and say so.
        failed, said = _hold(entry["name"], agent, workspace, megabytes=each // 2, children=2)
        assert (failed, said) == (False, "FULL FULL"), said
        failed, said = _hold(entry["name"], agent, workspace, megabytes=each, children=3)
        # The group's ceiling stops a child (or the server itself, whichever the kernel
        # picks): never all three filled.
        assert failed or said.split().count("FULL") < 3, said


def test_without_a_control_group_each_process_is_held_to_the_ceiling(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path, monkeypatch: Any
) -> None:
    # A worker that cannot make control groups (not root, none delegated): the rlimit is
    # the wall. The server gets MemoryError and says so; it is not killed.
    monkeypatch.setattr(server_launch, "server_cgroup", lambda identity, memory: None)
    entry = _entry("rlimit")
    with bridged_servers(settings, tmp_path, [entry]):
        assert _hold(entry["name"], agent, workspace, megabytes=16) == (False, "HELD 16")
        failed, said = _hold(entry["name"], agent, workspace, megabytes=CEILING_MIB * 3)
        assert (failed, said) == (False, "REFUSED MemoryError"), said
        # The same server, still running, goes on answering.
        assert _hold(entry["name"], agent, workspace, megabytes=16) == (False, "HELD 16")


def test_the_ceiling_is_the_backends_unless_the_entry_names_one() -> None:
    from common.config.mcp import McpServer
    from common.config.sandbox import SandboxingConfig

    config = SandboxingConfig.model_validate(
        {"namespace": {"server_memory_limit": "300m"}, "docker": {"memory_limit": "200m"}}
    )
    plain = {"name": "plain", "transport": "stdio", "command": ["/bin/true"]}
    server = McpServer.model_validate(plain)
    assert server_launch.server_memory(server, config) == 300 * 1024**2
    docker = McpServer.model_validate({**plain, "sandbox": "docker"})
    assert server_launch.server_memory(docker, config) == 200 * 1024**2
    own = McpServer.model_validate({**plain, "memory_limit": "64m"})
    assert server_launch.server_memory(own, config) == 64 * 1024**2
    launched = server_launch.stdio_launch(own, workspace=None, config=config)
    try:
        assert launched.memory_bytes == 64 * 1024**2
        assert launched.cgroup is not None, "a root worker gives each namespace server a group"
        group = launched.cgroup.memory_dir
        v2 = (group / "memory.max").exists()
        ceiling = (group / ("memory.max" if v2 else "memory.limit_in_bytes")).read_text()
        assert int(ceiling) == 64 * 1024**2
        assert f"--data={2 * 64 * 1024**2}" in launched.argv
    finally:
        launched.cleanup()
