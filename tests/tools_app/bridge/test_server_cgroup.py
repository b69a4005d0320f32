"""A namespace server's control group: joined before anything of it runs, emptied after.

Real cgroups, a real process started the way the MCP client starts a server's command
line. What the server leaves behind (a child that left its session and outlived it) is
killed when the server's launch is cleaned up, and the group is removed.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from common.config.mcp import McpServer
from common.config.sandbox import SandboxingConfig
from common.testing import wait_until
from tools_app.bridge.launch import JOIN_CGROUP, MAX_PROCESSES, stdio_launch


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_left_behind_child_is_killed_and_the_group_removed(tmp_path: Path) -> None:
    server = McpServer.model_validate(
        {"name": "leaves", "transport": "stdio", "command": ["/bin/true"], "sandbox": "namespace"}
    )
    launch = stdio_launch(server, workspace=None, config=SandboxingConfig())
    group = launch.cgroup
    assert group is not None, "a root worker gives each namespace server a control group"
    assert (group.pids_dir / "pids.max").read_text().strip() == str(MAX_PROCESSES)
    marker = tmp_path / "child"
    # Joined as the server's command line joins, then a child that leaves its session.
    script = f"setsid sleep 300 < /dev/null > /dev/null 2>&1 & echo $! > {marker}"
    joined = ["/bin/sh", "-c", JOIN_CGROUP, "synthorg-join", *group.procs_files, "--"]
    subprocess.run([*joined, "/bin/sh", "-c", script], check=True, timeout=30)
    wait_until(
        lambda: marker.exists() and bool(marker.read_text().strip()), timeout=10, what="child"
    )
    child = int(marker.read_text())
    try:
        assert _alive(child) and child in group.pids()
        launch.cleanup()
        wait_until(lambda: not _alive(child), timeout=10, what="the child to be killed")
        assert not group.pids_dir.exists()
    finally:
        if _alive(child):
            os.kill(child, 9)


def test_a_command_outside_the_group_is_not_touched(tmp_path: Path) -> None:
    # The control: a process the worker started without joining is left alone.
    server = McpServer.model_validate(
        {"name": "alone", "transport": "stdio", "command": ["/bin/true"], "sandbox": "namespace"}
    )
    launch = stdio_launch(server, workspace=None, config=SandboxingConfig())
    outside = subprocess.Popen(["sleep", "300"])
    try:
        launch.cleanup()
        time.sleep(0.2)
        assert outside.poll() is None
    finally:
        outside.kill()
        outside.wait()
