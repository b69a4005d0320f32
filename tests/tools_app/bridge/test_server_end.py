"""A warm server whose process ends on its own is said so in the log, with its last words.

The MCP client closes the session quietly when the server's output ends: nothing raises
in the task holding it. The pool says why the server went (``bridge_server_failed``,
with the tail of its standard error), the call that was running fails, and the next
call starts the server again. The real server, in the real sandbox, through this
process's warm pool as a worker runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from common.testing import wait_until
from tests.tools_app.bridge.bridged import NET_SERVER, bridged_servers, call, server_name
from tools_app.builtin.base import ToolFailedError
from trust_app.models import Agent

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _failures(caplog: pytest.LogCaptureFixture, server: str) -> list[dict[str, Any]]:
    return [
        record.msg
        for record in caplog.records
        if isinstance(record.msg, dict)
        and record.msg.get("event") == "bridge_server_failed"
        and record.msg.get("server") == server
    ]


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
