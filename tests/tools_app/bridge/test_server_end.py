"""A warm server whose process ends on its own is said so in the log, with its last words;
one still starting is never taken for a dead one.

The MCP client closes the session quietly when the server's output ends: nothing raises
in the task holding it. The pool says why the server went (``bridge_server_failed``,
with the tail of its standard error), the call that was running fails, and the next
call starts the server again. The real server, in the real sandbox, through this
process's warm pool as a worker runs it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from common.testing import wait_until
from tests.tools_app.bridge.bridged import (
    NET_SERVER,
    bridged_servers,
    call,
    server_failures,
    server_name,
)
from tools_app.bridge.pool import WarmServer, bridge_pool
from tools_app.builtin.base import ToolFailedError
from trust_app.models import Agent

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _failures(caplog: pytest.LogCaptureFixture, server: str) -> list[dict[str, Any]]:
    return server_failures(caplog.records, server)


def test_a_server_that_ends_mid_call_is_logged_with_its_last_words(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    name = server_name("dies")
    with bridged_servers(
        settings, tmp_path, [{"transport": "stdio", "command": NET_SERVER, "name": name}]
    ):
        # The control: the same warm server answers, and nothing is logged as failed.
        _, settled, _ = call(f"{name}__env", {"name": "PATH"}, agent=agent, workspace=workspace)
        assert "PATH=" in settled.content
        assert _failures(caplog, name) == []
        with pytest.raises(ToolFailedError, match="Connection closed"):
            call(
                f"{name}__die", {"words": "panic: out of cheese"}, agent=agent, workspace=workspace
            )
        wait_until(
            lambda: bool(_failures(caplog, name)), timeout=30, what="the server's end logged"
        )
        (failed,) = _failures(caplog, name)
        assert "ended on its own" in failed["error"], failed
        assert "panic: out of cheese" in failed["stderr"], failed
        # The next call starts it again.
        _, settled, _ = call(f"{name}__env", {"name": "PATH"}, agent=agent, workspace=workspace)
        assert "PATH=" in settled.content


def _starting(name: str) -> WarmServer | None:
    return next((w for w in bridge_pool().servers.values() if w.server.name == name), None)


def test_a_server_still_starting_is_not_taken_for_a_dead_one(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path
) -> None:
    # A server slow to start (a loaded machine, a big runtime) has no session yet while it
    # starts. The pool's periodic pass over its servers came then, took it for one whose
    # session had ended, and stopped it under the call that was starting it ("Connection
    # closed"). The pass runs here while the start is under way.
    name = server_name("slowstart")
    slow = ["/bin/sh", "-c", 'sleep 3; exec "$@"', "slow-start", *NET_SERVER]
    said: dict[str, Any] = {}

    def one_call() -> None:
        try:
            said["answer"] = call(
                f"{name}__env", {"name": "PATH"}, agent=agent, workspace=workspace
            )[1].content
        except Exception as exc:
            said["error"] = exc
        finally:
            connection.close()

    with bridged_servers(
        settings, tmp_path, [{"transport": "stdio", "command": slow, "name": name}]
    ):
        caller = threading.Thread(target=one_call)
        caller.start()
        wait_until(lambda: _starting(name) is not None, timeout=30, what="the start to begin")
        warm = _starting(name)
        assert warm is not None and not warm.ready.is_set(), "still starting (3 s)"
        bridge_pool().submit(bridge_pool().reap()).result(timeout=30)
        caller.join(timeout=90)
        assert "error" not in said, said
        assert "PATH=" in said["answer"], said
        # The control: the same pass stops a server whose session has ended.
        running = _starting(name)
        assert running is not None and running.alive
        bridge_pool().loop.call_soon_threadsafe(running.stop.set)  # its session ends
        wait_until(lambda: not running.alive, timeout=30, what="the session to end")
        bridge_pool().submit(bridge_pool().reap()).result(timeout=30)
        assert _starting(name) is None
