"""One server's start holds that server only: the worker's other warm servers answer
meanwhile, and a start in progress is never stopped to make room for another.

The pool held one lock across every server while a server started (seconds; a server
that fetches its runtime, minutes), so each bridged call on that worker waited for a
start that was not its own. The real servers, in the real sandbox, through this
process's warm pool as a worker runs it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from common.testing import wait_until
from tests.tools_app.bridge.bridged import NET_SERVER, bridged_servers, call, server_name
from tools_app.bridge.pool import WarmServer, bridge_pool
from tools_app.builtin.base import ToolFailedError
from trust_app.models import Agent

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# Long enough that a call waiting behind the start could not answer before it ends.
SLOW_START = ["/bin/sh", "-c", 'sleep 10; exec "$@"', "slow-start", *NET_SERVER]


def _warm(name: str) -> WarmServer | None:
    return next((w for w in bridge_pool().servers.values() if w.server.name == name), None)


def _call_in_thread(tool: str, agent: Agent, workspace: Path, said: dict[str, Any]) -> None:
    try:
        said["answer"] = call(tool, {"name": "PATH"}, agent=agent, workspace=workspace)[1].content
    except Exception as exc:
        said["error"] = exc
    finally:
        connection.close()


def test_a_slow_start_holds_no_other_servers_call(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path
) -> None:
    slow, quick = server_name("slow"), server_name("quick")
    servers = [
        {"transport": "stdio", "command": SLOW_START, "name": slow},
        {"transport": "stdio", "command": NET_SERVER, "name": quick},
    ]
    with bridged_servers(settings, tmp_path, servers):
        # The control first: the quick server, started and warm, answers.
        warmed = call(f"{quick}__env", {"name": "PATH"}, agent=agent, workspace=workspace)
        assert "PATH=" in warmed[1].content
        said: dict[str, Any] = {}
        caller = threading.Thread(
            target=_call_in_thread, args=(f"{slow}__env", agent, workspace, said)
        )
        caller.start()
        wait_until(lambda: _warm(slow) is not None, timeout=30, what="the slow start to begin")
        starting = _warm(slow)
        assert starting is not None and not starting.ready.is_set()
        # The attack's victim: another server's call, while the slow one starts.
        answer = call(f"{quick}__env", {"name": "PATH"}, agent=agent, workspace=workspace)
        assert "PATH=" in answer[1].content
        assert not starting.ready.is_set(), "the quick call waited for the slow start"
        caller.join(timeout=120)
        assert "error" not in said, said
        assert "PATH=" in said["answer"], said


def test_a_starting_server_is_not_stopped_to_make_room(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path
) -> None:
    # With one slot, a second server's call finds the slot held by a start in progress:
    # it is refused as busy (as for a server in use), and the start goes on to answer.
    settings.SYNTHORG_BRIDGE_POOL_SIZE = 1
    slow, quick = server_name("slow"), server_name("quick")
    servers = [
        {"transport": "stdio", "command": SLOW_START, "name": slow},
        {"transport": "stdio", "command": NET_SERVER, "name": quick},
    ]
    with bridged_servers(settings, tmp_path, servers):
        said: dict[str, Any] = {}
        caller = threading.Thread(
            target=_call_in_thread, args=(f"{slow}__env", agent, workspace, said)
        )
        caller.start()
        wait_until(lambda: _warm(slow) is not None, timeout=30, what="the slow start to begin")
        with pytest.raises(ToolFailedError, match="slots is busy") as refused:
            call(f"{quick}__env", {"name": "PATH"}, agent=agent, workspace=workspace)
        assert refused.value.code == "bridge_busy"
        caller.join(timeout=120)
        assert "error" not in said, said
        assert "PATH=" in said["answer"], said
        # The control: once the slow server is idle, its slot goes to the other server.
        answer = call(f"{quick}__env", {"name": "PATH"}, agent=agent, workspace=workspace)
        assert "PATH=" in answer[1].content
        assert _warm(slow) is None
