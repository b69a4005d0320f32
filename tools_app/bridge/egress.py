"""A stdio MCP server's network: its ``network`` allowlist, through its own egress proxy.

A server whose entry names ``network: [host:port, ...]`` gets an egress proxy for as
long as it runs warm: the pool opens it before starting the server and stops it after
the server stops. The proxy decides each connection by a ``NetworkGrant`` made from that
list alone (``allowlist_only``, private and loopback addresses refused unless an entry
names the IP literal and port; names resolved and pinned by the SSRF guard, so a name
resolving to loopback is refused). A server without ``network`` gets no proxy, no
network.

Audit: the proxy's records are drained after each call and written with that call's
invocation (the connections that ended while it ran, after waiting up to
``SYNTHORG_BRIDGE_EGRESS_SETTLE_SECONDS`` for open ones to close; on a shared server a
concurrent call's connection may land with the call that finishes first). What ended after the
last call is written, with no invocation, when the server stops.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings

from common.config.mcp import McpServer
from tools_app.egress.decision import EgressDecider, NetworkGrant
from tools_app.egress.records import ConnectionRecord
from tools_app.egress.server import EgressProxy
from tools_app.egress.session import egress_serving

RecordsWriter = Callable[[list[ConnectionRecord], int], None]


def has_proxy(server: McpServer) -> bool:
    """True for a stdio server whose ``network`` names hosts (an http server's ``network``
    is where the console reaches it, not a proxy of its own)."""
    return server.transport == "stdio" and bool(server.network)


def server_grant(server: McpServer) -> NetworkGrant:
    """What ``server`` may reach: its ``network`` entries, nothing else."""
    return NetworkGrant(mode="allowlist_only", allowed_hosts=tuple(server.network))


class ServerEgress:
    """The running egress proxy of one warm server (open it with ``open``)."""

    def __init__(self, server: McpServer, sealed: tuple[Any, ...] = ()) -> None:
        """``sealed``: the call's granted secrets (``secrets_app.broker.GrantedSecret``)
        the proxy adds to the server's requests to their grants' hosts."""
        from tools_app.worker.egress import proxy_limits, proxy_resolver, sealing_for

        self.server = server
        decider = EgressDecider(
            server_grant(server), agent_name=f"the MCP server {server.name}",
            resolver=proxy_resolver(),
        )  # fmt: skip
        self._stack = contextlib.ExitStack()
        port, proxy = self._stack.enter_context(
            egress_serving(
                decider,
                limits=proxy_limits(),
                max_records=settings.SYNTHORG_EGRESS_MAX_AUDITED_CONNECTIONS,
                **sealing_for(sealed),
            )
        )
        self.directory: Path = port.directory
        self._proxy: EgressProxy = proxy

    def drain(self) -> tuple[list[ConnectionRecord], int]:
        """The connections that ended since the last drain (and those refused unrecorded),
        after waiting briefly for open ones to end."""
        return self._proxy.drain(settings.SYNTHORG_BRIDGE_EGRESS_SETTLE_SECONDS)

    def close(self) -> tuple[list[ConnectionRecord], int]:
        """Stop the proxy (cutting what is open) and return what no drain took."""
        records = self._proxy.stop()
        unrecorded = self._proxy.unrecorded
        self._stack.close()
        return records, unrecorded


def write_server_records(
    *,
    server: str,
    agent_id: str | None,
    invocation_id: str | None,
    tool: str,
    records: list[ConnectionRecord],
    unrecorded: int,
) -> None:
    """Audit rows for a server's connections (any thread; its own database connection)."""
    if not records and not unrecorded:
        return
    from tools_app.bridge.definitions import CATEGORY
    from tools_app.services.egress_audit import egress_server_connections_record
    from trust_app.models import Agent

    agent: Any | None = Agent.objects.filter(pk=agent_id).first() if agent_id else None
    egress_server_connections_record(
        server=server,
        agent=agent,
        invocation_id=uuid.UUID(invocation_id) if invocation_id else None,
        tool=tool,
        category=CATEGORY,
        records=records,
        unrecorded=unrecorded,
    )
