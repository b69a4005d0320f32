"""One message from a stdio server is held to ``SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES``.

The MCP client keeps a line in memory until its newline: one endless line filled the
worker's memory and took its CPU, outside every ceiling of the server's own sandbox.
The server's standard output now reaches the client through ``wire_cap``, which stops
the server when one message grows past the cap. The real server, in the real sandbox,
through this process's warm pool as a worker runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from common.testing import wait_until
from tests.tools_app.bridge.bridged import (
    NET_SERVER,
    bridged_servers,
    call,
    server_failures,
    server_name,
)
from tools_app.builtin.base import ToolFailedError
from trust_app.models import Agent

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CAP = 1024 * 1024


def _said(caplog: pytest.LogCaptureFixture, server: str) -> str:
    return " ".join(str(failed.get("stderr")) for failed in server_failures(caplog.records, server))


def _peak_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_an_endless_message_stops_the_server_not_the_worker(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings.SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES = CAP
    name = server_name("flood")
    with bridged_servers(
        settings, tmp_path, [{"transport": "stdio", "command": NET_SERVER, "name": name}]
    ):
        # The control: a message under the cap passes (the client drops a line that is no
        # JSON-RPC), and the server answers on.
        _, settled, _ = call(f"{name}__flood", {"kilobytes": 512}, agent=agent, workspace=workspace)
        assert settled.content == "FLOODED 512"
        assert _said(caplog, name) == ""
        # The attack: 64 times the cap in one line.
        before = _peak_kib()
        with pytest.raises(ToolFailedError, match="Connection closed"):
            call(f"{name}__flood", {"kilobytes": 64 * 1024}, agent=agent, workspace=workspace)
        wait_until(lambda: bool(_said(caplog, name)), timeout=30, what="the server's end logged")
        assert f"wrote a message of more than {CAP} bytes" in _said(caplog, name)
        # The worker held at most about the cap of it, never the 64 MiB.
        assert _peak_kib() - before < 16 * 1024, (before, _peak_kib())
        # The next call starts the server again.
        _, settled, _ = call(f"{name}__env", {"name": "PATH"}, agent=agent, workspace=workspace)
        assert "PATH=" in settled.content
