"""What the last health check of each upstream MCP server found: /healthz and the tools
pages read it.

Each worker's discovery writes, after each listing of a server (its health check), the
state to Redis, where workers report their sandbox probes too: ``available`` with the
number of tools listed, or ``unavailable`` with the reason and the sanitised tail of the
server's standard error. A state lives a few health rounds; one no worker refreshes
goes, and the server reads ``not checked yet``. Readers pair the config's servers with
what was written, so a server that never listed still shows, with its reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from common.config.mcp import McpServer
from common.platform.redis import redis_client

SERVER_STATE_PREFIX = "synthorg:bridge-server:"
AVAILABLE = "available"
UNAVAILABLE = "unavailable"
NOT_CHECKED = "not checked yet"
DISABLED = "disabled"


@dataclass(frozen=True)
class ServerState:
    """One configured server as its last health check left it."""

    server: str
    transport: str
    state: str
    reason: str = ""
    stderr: str = ""  # the tail of its standard error (stdio servers that failed)
    tools: int | None = None  # how many tools it listed at that check
    checked_at: float | None = None  # when (seconds since the epoch)
    worker: str = ""

    @property
    def ok(self) -> bool:
        return self.state in (AVAILABLE, DISABLED)

    @property
    def age_seconds(self) -> float | None:
        return None if self.checked_at is None else max(time.time() - self.checked_at, 0.0)

    def describe(self) -> str:
        """One line: the state, the reason or what was listed, and how long ago."""
        if self.state == AVAILABLE:
            words = f"available: listed {self.tools} tool(s)"
        elif self.state == UNAVAILABLE:
            words = f"unavailable: {self.reason}"
        elif self.state == DISABLED:
            words = "disabled in the config (enabled: false)"
        else:
            words = "not checked yet: no worker has listed it recently"
        age = self.age_seconds
        return words if age is None else f"{words} (checked {age:.0f} s ago)"


def _ttl(servers: int) -> int:
    # A round lists the servers one after the other, each within the start limit.
    interval = settings.SYNTHORG_BRIDGE_HEALTH_INTERVAL
    return int(3 * interval + settings.SYNTHORG_BRIDGE_START_SECONDS * max(servers, 1)) + 1


def record_server_state(
    server: McpServer,
    *,
    available: bool,
    reason: str = "",
    stderr: str = "",
    tools: int | None = None,
    servers: int = 1,
) -> None:
    """Write what this health check of ``server`` found (``servers``: how many a round
    checks, for how long the state is kept). A Redis that is down loses it, silently:
    its own part of /healthz says so."""
    payload = {
        "state": AVAILABLE if available else UNAVAILABLE,
        "reason": reason,
        "stderr": stderr,
        "tools": tools,
        "checked_at": time.time(),
        "worker": f"{socket.gethostname()}:{os.getpid()}",
    }
    with contextlib.suppress(Exception):
        redis_client().set(SERVER_STATE_PREFIX + server.name, json.dumps(payload), ex=_ttl(servers))


def server_states(servers: Sequence[McpServer]) -> list[ServerState]:
    """The state of each of ``servers``, in their order (Redis unreadable: an exception)."""
    keys = [SERVER_STATE_PREFIX + s.name for s in servers]
    raw = redis_client().mget(keys) if keys else []
    states = []
    for server, value in zip(servers, raw, strict=True):
        if not server.enabled:
            states.append(ServerState(server.name, server.transport, DISABLED))
            continue
        if value is None:
            states.append(ServerState(server.name, server.transport, NOT_CHECKED))
            continue
        data = json.loads(value)
        states.append(
            ServerState(
                server=server.name,
                transport=server.transport,
                state=str(data.get("state") or UNAVAILABLE),
                reason=str(data.get("reason") or ""),
                stderr=str(data.get("stderr") or ""),
                tools=data.get("tools"),
                checked_at=data.get("checked_at"),
                worker=str(data.get("worker") or ""),
            )
        )
    return states
