"""Reads for the connections page: each configured connection as admins see it."""

from __future__ import annotations

from typing import Any

from common.config.connections import Connection
from common.settings_config import synthorg_config
from common.vocabulary.categories import ToolCategory
from tools_app.builtin.external_data.grants import granted_connections
from trust_app.models import Agent
from trust_app.selectors.agents import agent_policy


def _agent_grants() -> list[tuple[Agent, dict[str, set[str] | None]]]:
    """Each agent with the connections its effective policy grants (as the tool's gate
    reads them: the level's sub-constraints with the agent's own on top)."""
    category = ToolCategory.EXTERNAL_DATA.value
    found = []
    for agent in Agent.objects.order_by("name"):
        constraints = agent_policy(agent).for_category(category).constraints
        granted = granted_connections(constraints.model_dump(mode="json"))
        if granted:
            found.append((agent, granted))
    return found


def connection_listing() -> list[dict[str, Any]]:
    """Every configured connection: host, auth scheme and secret name (never a value),
    operations with their class, limits, and the agents granted it."""
    grants = _agent_grants()
    return [_entry(connection, grants) for connection in synthorg_config().connections]


def _entry(
    connection: Connection, grants: list[tuple[Agent, dict[str, set[str] | None]]]
) -> dict[str, Any]:
    return {
        "name": connection.name,
        "base_url": connection.base_url,
        "host": connection.host_entry,
        "private_network": connection.private_network,
        "scheme": connection.auth.scheme if connection.auth else None,
        "secret_name": connection.auth.secret if connection.auth else None,
        "openapi": connection.openapi,
        "operations": [
            {
                "label": operation.label,
                "method": operation.method,
                "path": operation.path,
                "kind": operation.resolved_kind,
                "sensitive": operation.sensitive,
                "asks_a_person": operation.asks_a_person,
                "redact": connection.redactions(operation),
            }
            for operation in connection.operations
        ],
        "rate_limit": connection.rate_limit,
        "max_concurrency": connection.max_concurrency,
        "agent_rate_limit": connection.per_agent.rate_limit if connection.per_agent else None,
        "agent_concurrency": connection.agent_concurrency,
        "max_response_bytes": connection.max_response_bytes,
        "timeout_seconds": connection.timeout_seconds,
        "agents": [
            {
                "agent": agent,
                "operations": "every operation"
                if granted[connection.name] is None
                else ", ".join(sorted(granted[connection.name] or ())),
            }
            for agent, granted in grants
            if connection.name in granted
        ],
    }
