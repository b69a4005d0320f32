"""PURE: what an agent is told about the connections granted to it.

``tools/list`` and the L2 body of ``external_data_request`` carry a short list of the
agent's connections and operations in the description; the whole list is the L3
resource ``connections`` (JSON). Only granted connections and operations are named:
another agent's connections, hosts and credentials are never shown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from common.config.connections import Connection
from tools_app.builtin.external_data.grants import granted_connections

RESOURCE_ID: Final = "connections"
# Operations named in the description; the resource has them all.
_DESCRIBED: Final = 40


def granted_operations(
    connections: tuple[Connection, ...], sub_constraints: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Each granted connection with the operations granted on it."""
    granted = granted_connections(sub_constraints)
    shown = []
    for connection in connections:
        if connection.name not in granted:
            continue
        allowed = granted[connection.name]
        operations = [
            {
                "name": operation.label,
                "method": operation.method,
                "path": operation.path,
                "kind": operation.resolved_kind,
                "sensitive": operation.sensitive,
                "asks_a_person": operation.asks_a_person,
                "redacted_fields": list(connection.redactions(operation)),
            }
            for operation in connection.operations
            if allowed is None or operation.label in allowed
        ]
        shown.append(
            {
                "connection": connection.name,
                "rate_limit": connection.rate_limit,
                "max_concurrency": connection.max_concurrency,
                "per_agent": connection.per_agent.model_dump() if connection.per_agent else None,
                "max_response_bytes": connection.max_response_bytes,
                "operations": operations,
            }
        )
    return shown


def disclosure_text(granted: list[dict[str, Any]]) -> str:
    """A few lines for the tool's description."""
    if not granted:
        return "No connection is granted to you."
    lines = ["Connections granted to you (method, path under the connection, kind):"]
    count = 0
    for entry in granted:
        lines.append(f"- {entry['connection']}{_limits_text(entry)}:")
        for operation in entry["operations"]:
            count += 1
            if count > _DESCRIBED:
                break
            asks = ", asks a person" if operation["asks_a_person"] else ""
            lines.append(
                f"  {operation['method']} {operation['path']} "
                f"({operation['kind']}{asks}; name {operation['name']})"
            )
    total = sum(len(entry["operations"]) for entry in granted)
    lines.append(f"The full list ({total} operations) is the resource {RESOURCE_ID!r}.")
    return "\n".join(lines)


def _limits_text(entry: Mapping[str, Any]) -> str:
    """`` (limits: ...)`` for a connection with a rate limit or limits of each agent."""
    shown = []
    if entry["rate_limit"]:
        shown.append(f"{entry['rate_limit']} for every agent together")
    own = entry["per_agent"] or {}
    if own.get("rate_limit"):
        shown.append(f"{own['rate_limit']} for you")
    if own.get("max_concurrency"):
        shown.append(f"{own['max_concurrency']} of your requests at once")
    return f" (limits: {'; '.join(shown)})" if shown else ""


def disclosure_json(granted: list[dict[str, Any]]) -> str:
    return json.dumps({"connections": granted}, ensure_ascii=False, indent=1)
