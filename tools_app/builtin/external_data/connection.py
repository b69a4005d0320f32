"""What every tool that speaks through a connection needs: its credential, fetched for the
call by the console (the agent never holds it), and the SSRF guard that keeps the request
on the connection's own host."""

from __future__ import annotations

from common.config.connections import Connection
from secrets_app.broker import SecretUnavailableError, secret_for_connection
from tools_app.builtin.base import ToolContext, ToolFailedError
from tools_app.net import EgressGuard, EgressPolicy
from trust_app.models import Agent


def connection_credential(context: ToolContext, connection: Connection, *, tool: str) -> str:
    """The connection's credential for this call ('' when it has none); audited as a use."""
    if connection.auth is None:
        return ""
    try:
        return secret_for_connection(
            agent=Agent.objects.get(id=context.agent_id),
            connection=connection.name,
            name=connection.auth.secret,
            tool=tool,
            invocation_id=context.invocation_uuid,
        )
    except SecretUnavailableError as exc:
        raise ToolFailedError(exc.message, code="CREDENTIAL_UNAVAILABLE") from exc


def connection_guard(connection: Connection) -> EgressGuard:
    """Requests only to the connection's host (a private one only when it says so)."""
    host = connection.host_entry
    return EgressGuard(
        EgressPolicy.build(
            restrict_to=[[host]],
            trusted=[host] if connection.private_network else (),
            block_private=True,
        )
    )
