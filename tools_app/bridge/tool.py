"""An upstream MCP tool as the worker runs it: a contract plus ``run`` through the warm pool.

``preflight`` refuses, before anyone is asked, a call to a tool its server no longer
offers (vanished, failed its health check, unconfigured, held): the reason is the
record's, read fresh from the database. ``run`` reads the tool's pin again and sends
the call only when the server, listed just before it, still gives the pinned
definition (``BridgePool.call``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.config.mcp import McpServer
from common.settings_config import synthorg_config
from tools_app.bridge.standing import HELD_CODE
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.contracts import ToolContract


@dataclass(frozen=True)
class ToolRecord:
    """What the bridge recorded of one upstream tool (plain data, hashable)."""

    name: str
    server: str
    upstream_name: str
    upstream_hash: str
    server_identity: str
    contract: Any

    def __hash__(self) -> int:
        return hash((self.name, self.upstream_hash, self.server_identity))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolRecord) and (
            self.name,
            self.upstream_hash,
            self.server_identity,
            self.contract,
        ) == (other.name, other.upstream_hash, other.server_identity, other.contract)

    def audit_fields(self) -> dict[str, str]:
        return {
            "name": self.name,
            "server": self.server,
            "upstream_name": self.upstream_name,
            "upstream_hash": self.upstream_hash,
            "server_identity": self.server_identity,
        }


def configured_server(name: str) -> McpServer | None:
    """The enabled config entry of server ``name``, or None."""
    return next((s for s in synthorg_config().mcp_servers if s.name == name and s.enabled), None)


def unavailable_reason(record_name: str) -> str | None:
    """Why the recorded tool cannot be called now, or None when it can."""
    from tools_app.models import UpstreamToolRecord

    row = UpstreamToolRecord.objects.filter(name=record_name).values("available", "reason").first()
    if row is None:
        return "the MCP bridge has no record of this tool any more"
    if not row["available"]:
        return str(row["reason"] or "its MCP server reported it unavailable")
    return None


@dataclass(frozen=True)
class BridgedTool:
    """The ``BuiltinTool`` shape for an upstream tool."""

    contract: ToolContract
    record: ToolRecord

    def preflight(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        """Refuse at once a call its server cannot take now, with the reason."""
        server = configured_server(self.record.server)
        if server is None:
            raise ToolRefusedError(
                RefusalCode.LIMIT_EXCEEDED,
                f"{self.contract.name} is unavailable: the MCP server {self.record.server} is "
                "not configured (or switched off) on this console",
            )
        reason = unavailable_reason(self.record.name)
        if reason is not None:
            raise ToolRefusedError(
                RefusalCode.LIMIT_EXCEEDED, f"{self.contract.name} is unavailable: {reason}"
            )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Call the upstream tool through this worker's warm pool; audit the bridge's part
        (the call, left in ``context.audit_entries`` for the call's end, and the server's
        connections through its egress proxy)."""
        from tools_app.bridge.credentials import SecretRedactor, server_secret_values
        from tools_app.bridge.egress import has_proxy
        from tools_app.bridge.pinning import upstream_pin
        from tools_app.bridge.pool import pool_key
        from tools_app.bridge.services import bridge_call_entry
        from tools_app.bridge.upstream_call import call_upstream

        self.preflight(context.settings, arguments)
        server = configured_server(self.record.server)
        assert server is not None
        standing, pinned_hash = upstream_pin(self.contract.name)
        if not standing.available:
            raise ToolFailedError(f"{standing.reason} This call was not run.", code=HELD_CODE)
        timeout = float(context.settings.get("timeout_seconds") or server.timeout_seconds)
        started = time.monotonic()
        outcome_code, reason = "ok", ""
        redact = SecretRedactor(())
        key = pool_key(server, context.agent_id)
        try:
            secrets = server_secret_values(
                server, agent_id=key[1], invocation_id=context.invocation_id,
                tool=self.contract.name,
            )  # fmt: skip
            redact = SecretRedactor(secrets.values)
            outcome = redact.outcome(
                call_upstream(
                    server=server,
                    tool=self.record.upstream_name,
                    arguments=dict(arguments),
                    timeout=timeout,
                    context=context,
                    secrets=secrets,
                    pinned_hash=pinned_hash,
                )
            )
            if outcome.is_error:
                outcome_code, reason = outcome.error_code or "upstream_error", outcome.content
            return outcome
        except ToolFailedError as exc:
            exc.message = redact.text(exc.message)
            outcome_code, reason = exc.code, exc.message
            raise
        except ToolRefusedError as exc:
            exc.reason = redact.text(exc.reason)
            outcome_code, reason = exc.code.value, exc.reason
            raise
        finally:
            # Written with the call's end, in the transaction that settles it.
            context.audit_entries.append(
                bridge_call_entry(
                    record=self.record.audit_fields(),
                    invocation_id=context.invocation_id,
                    outcome=outcome_code,
                    reason=redact.text(reason)[:2000],
                    duration_ms=int((time.monotonic() - started) * 1000),
                )
            )
            if has_proxy(server):
                _audit_connections(key, server.name, context, self.contract.name)


def _audit_connections(
    key: tuple[str, str | None], server: str, context: ToolContext, tool: str
) -> None:
    """The server's connections that ended by now, with this call's invocation."""
    from tools_app.bridge.egress import write_server_records
    from tools_app.bridge.pool import bridge_pool

    records, unrecorded = bridge_pool().egress_records(key)
    write_server_records(
        server=server, agent_id=context.agent_id, invocation_id=context.invocation_id,
        tool=tool, records=records, unrecorded=unrecorded,
    )  # fmt: skip
