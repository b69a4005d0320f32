"""Run bridged tools in this process the way a worker does: the config names the servers,
discovery records their tools (the real server, in the real sandbox), and each call
goes through ``BridgedTool.run`` and this process's warm pool; the pipeline's settle
step gives what the agent is shown."""

from __future__ import annotations

import dataclasses
import functools
import json
import sysconfig
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from django.db import transaction

from audit_app.record import AuditEntry, audit_record_many
from common.config.mcp import McpServer
from common.settings_config import config_reload, synthorg_config
from common.testing import run_fresh
from tools_app.bridge.catalog import forget_records
from tools_app.bridge.connect import list_upstream_tools, open_session
from tools_app.bridge.definitions import UpstreamTool
from tools_app.bridge.discovery import list_server, record_listing
from tools_app.bridge.pool import bridge_pool
from tools_app.builtin.base import ToolContext, ToolOutcome
from tools_app.registry import tool_catalog
from tools_app.sandbox.protocol import Owner, SandboxBackend
from tools_app.services.invocation_outcome import Settled, settle_outcome
from trust_app.models import Agent

SERVERS = Path(__file__).with_name("servers")
# The suite's own site-packages: the Python servers import the SDK from there.
SITE = sysconfig.get_paths()["purelib"]
NET_SERVER = [
    "/usr/bin/python3",
    str(SERVERS / "py_net.py"),
    SITE,
]


def server_name(prefix: str) -> str:
    """A fresh server name (the pool and the records are keyed by it)."""
    return f"{prefix}{uuid.uuid4().hex[:8]}"


@contextmanager
def bridged_servers(
    settings: Any, tmp_path: Path, servers: list[dict[str, Any]], *,
    listing_workspace: Path | None = None,
) -> Iterator[None]:  # fmt: skip
    """The config names ``servers`` (each running the same program); their tools are
    discovered (the first server listed in ``listing_workspace`` when its program lives
    there); the warm ones stop after."""
    config = {
        "sandboxing": {"namespace": {"extra_ro_binds": [SITE, str(SERVERS)]}},
        "mcp_servers": servers,
    }
    path = tmp_path / "synthorg.yaml"
    path.write_text(json.dumps(config))
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()
    try:
        # Every server here runs the same program: the first one's listing (the real
        # discovery, in the sandbox) is recorded for each, one cold start instead of many.
        configured = synthorg_config().mcp_servers
        tools = run_fresh(functools.partial(_listing, configured[0], listing_workspace))
        for server in configured:
            listed = [dataclasses.replace(t, server=server.name) for t in tools]
            assert record_listing(server, listed), f"{server.name}: no tools recorded"
        yield
    finally:
        stop_servers([s["name"] for s in servers])
        forget_records()


async def _listing(server: McpServer, workspace: Path | None) -> list[UpstreamTool]:
    if workspace is None:
        return await list_server(server)
    sandboxing = synthorg_config().sandboxing
    async with open_session(server, workspace=workspace, sandboxing=sandboxing) as session:
        return await list_upstream_tools(session, server.name)


def stop_servers(names: list[str]) -> None:
    """Stop the warm servers named (their proxies' last records are audited)."""
    pool = bridge_pool()
    for warm in [w for w in list(pool.servers.values()) if w.server.name in names]:
        pool.submit(pool._stop(warm)).result(timeout=60)


def call(
    tool: str, arguments: dict[str, Any], *, agent: Agent, workspace: Path
) -> tuple[ToolOutcome, Settled, str]:
    """Run ``tool`` for ``agent``: the outcome, the agent's view, the invocation id. The
    audit rows the tool leaves are written after, however it ended, as the worker writes
    them with the call's end."""
    implementation = tool_catalog().implementation(tool)
    assert implementation is not None, f"{tool} was not discovered"
    invocation_id = str(uuid.uuid4())
    context = ToolContext(
        agent_id=str(agent.id),
        agent_name=agent.name,
        workspace=workspace,
        sandbox=cast(SandboxBackend, None),  # a bridged tool starts its own sandbox
        owner=Owner(agent_id=str(agent.id)),
        invocation_id=invocation_id,
    )
    try:
        outcome = implementation.run(context, arguments)
    finally:
        with transaction.atomic():
            audit_record_many([AuditEntry(**entry, agent=agent) for entry in context.audit_entries])
    settled = settle_outcome(contract=implementation.contract, outcome=outcome)
    return outcome, settled, invocation_id


def server_failures(records: list[Any], server: str) -> list[dict[str, Any]]:
    """The ``bridge_server_failed`` events logged for ``server`` (``caplog.records``)."""
    return [
        record.msg
        for record in records
        if isinstance(record.msg, dict)
        and record.msg.get("event") == "bridge_server_failed"
        and record.msg.get("server") == server
    ]
