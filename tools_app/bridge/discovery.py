"""Discovery: workers list each configured server's tools and record them for every node.

Where: in each Celery worker's main process, at start and then every
``SYNTHORG_BRIDGE_HEALTH_INTERVAL`` seconds (that listing is the server's health check);
and in worker processes whenever the pool opens a session to a server (a restart
included), whenever a warm server sends ``notifications/tools/list_changed``, and
whenever the listing taken before a call does not show the called tool's pinned
definition. Workers are where servers may be started (inside
their sandboxes); web nodes never start one and learn the tools from the records
(``UpstreamToolRecord``), the place every node shares. A server that cannot be started
or listed makes its recorded tools unavailable with the reason (the audit row and the
log line carry the tail of a stdio server's standard error); a server the config no
longer names, too. Each listing's outcome is also the server's state on /healthz and
the tools pages (``bridge.health``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import structlog
from django.conf import settings
from django.db import close_old_connections, connection

from common.config.mcp import McpServer
from common.settings_config import synthorg_config
from tools_app.bridge.catalog import forget_records
from tools_app.bridge.connect import list_upstream_tools, open_session
from tools_app.bridge.definitions import UpstreamTool, contract_name
from tools_app.bridge.health import record_server_state
from tools_app.bridge.pinning import upstream_pin
from tools_app.bridge.services import (
    bridge_discovery_record,
    bridge_server_unavailable,
    bridge_servers_unconfigured,
)
from tools_app.bridge.standing import CallRefusal, refusal_before_call
from tools_app.bridge.stderr import StderrTail
from tools_app.secrets import known_secrets_now

log = structlog.get_logger("synthorg.bridge")
_stop = threading.Event()


def record_listing(server: McpServer, tools: Sequence[UpstreamTool]) -> list[str]:
    """Record one listing of ``server`` (from any thread)."""
    close_old_connections()
    try:
        changed = bridge_discovery_record(server=server, tools=tools)
    finally:
        close_old_connections()
    forget_records()
    if changed:
        log.info("bridge_tools_recorded", server=server.name, changed=changed)
    return changed


def record_session_listing(server: McpServer, tools: Sequence[UpstreamTool]) -> list[str]:
    """Record the listing of a session that just opened (the pool's executor thread)."""
    try:
        return record_listing(server, tools)
    finally:
        connection.close()  # an executor thread: no connection left open behind it


def refusal_at_call(server: McpServer, tools: Sequence[UpstreamTool], tool: str) -> CallRefusal:
    """A listing taken just before a call to ``tool`` did not show its pinned definition:
    record it (a changed definition is held now, audited, its waiting calls withdrawn)
    and say why the call is not sent. From the pool's executor thread."""
    name = contract_name(server.name, tool)
    try:
        record_listing(server, tools)
        standing, _ = upstream_pin(name)
    finally:
        connection.close()
    listed = any(t.name == tool for t in tools)
    return refusal_before_call(
        contract_name=name, server=server.name, listed=listed, standing=standing
    )


async def list_server(server: McpServer, stderr: StderrTail | None = None) -> list[UpstreamTool]:
    """Start (or connect to) ``server`` once, list its tools, stop it; ``stderr`` keeps
    the tail of what a stdio server wrote there."""
    async with asyncio.timeout(settings.SYNTHORG_BRIDGE_START_SECONDS):
        async with open_session(
            server, workspace=None, sandboxing=synthorg_config().sandboxing, stderr=stderr
        ) as session:
            return await list_upstream_tools(session, server.name)


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return (
            f"it did not start and list its tools within "
            f"{settings.SYNTHORG_BRIDGE_START_SECONDS:g} s"
        )
    detail = getattr(exc, "reason", None) or str(exc) or exc.__class__.__name__
    return f"it could not be started or listed ({detail})"


def discover_server(server: McpServer, *, servers: int = 1) -> list[str]:
    """List ``server`` and record the result, or record why its tools are unavailable
    (``servers``: how many the round checks)."""
    stderr = StderrTail() if server.transport == "stdio" else None
    try:
        tools = asyncio.run(list_server(server, stderr))
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        reason = f"the MCP server {server.name} failed its health check: {_reason(exc)}"
        close_old_connections()
        said = stderr.text(known_secrets=known_secrets_now()) if stderr is not None else ""
        log.warning("bridge_server_unavailable", server=server.name, reason=reason, stderr=said)
        record_server_state(server, available=False, reason=reason, stderr=said, servers=servers)
        changed = bridge_server_unavailable(server=server.name, reason=reason, stderr=said)
        forget_records()
        return changed
    finally:
        if stderr is not None:
            stderr.spawned()
    record_server_state(server, available=True, tools=len(tools), servers=servers)
    return record_listing(server, tools)


def discovery_round() -> None:
    """One pass over the config's servers (a server that fails never stops the others)."""
    servers = [s for s in synthorg_config().mcp_servers if s.enabled]
    close_old_connections()
    bridge_servers_unconfigured(configured=[s.name for s in servers])
    for server in servers:
        try:
            discover_server(server, servers=len(servers))
        except Exception:
            log.exception("bridge_discovery_failed", server=server.name)


def start_discovery() -> None:
    """Discover now and then every health interval, in a daemon thread of this process."""
    if not synthorg_config().mcp_servers:
        return

    def loop() -> None:
        while True:
            try:
                discovery_round()
            except Exception:
                log.exception("bridge_discovery_round_failed")
            if _stop.wait(settings.SYNTHORG_BRIDGE_HEALTH_INTERVAL):
                return

    threading.Thread(target=loop, name="synthorg-mcp-discovery", daemon=True).start()


def stop_discovery() -> None:
    _stop.set()
