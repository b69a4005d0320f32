"""PURE: the connections and operations an agent is granted (sub-constraint
``connections``: ``name`` or ``name:operation``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.config.connections import parse_grant


def granted_connections(sub_constraints: Mapping[str, Any]) -> dict[str, set[str] | None]:
    """``name -> granted operation labels`` (None: every operation) from the agent's
    ``connections`` sub-constraint."""
    granted: dict[str, set[str] | None] = {}
    for entry in sub_constraints.get("connections") or ():
        try:
            name, operation = parse_grant(str(entry))
        except ValueError:
            continue  # refused when the permissions were written; never widens a grant
        if operation is None:
            granted[name] = None
        elif name not in granted or granted[name] is not None:
            operations = granted.get(name) or set()
            operations.add(operation)
            granted[name] = operations
    return granted
