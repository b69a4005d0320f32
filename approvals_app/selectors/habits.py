"""What an agent's earlier calls used (tools, hosts, workspace folders), for its risk.

Only calls that ran and succeeded count: a host the egress guard refused is not one
the agent "has reached". The newest ``SYNTHORG_RISK_HISTORY_CALLS`` calls are read,
and of each only its tool and its path, URL and host arguments (read in the
database), never a large argument.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping
from typing import Any, Final

from django.conf import settings
from django.db.models.fields.json import KT

from approvals_app.policy.readings import host_value_readings, path_value_readings
from approvals_app.policy.risk import AgentHabits

HISTORY_CALLS_DEFAULT: Final = 500
PATH_ROLE: Final = "path"
HOST_ROLES: Final = frozenset({"url", "host"})
_SAFE_NAME: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def _roles() -> dict[str, dict[str, str]]:
    """Each tool's path, URL and host arguments (argument → role)."""
    from tools_app.registry import tool_catalog

    try:
        contracts = list(tool_catalog())
    except Exception:  # an unloadable catalog leaves the habits to tool names alone
        return {}
    return {
        contract.name: {
            name: role.value
            for name, role in contract.argument_roles.items()
            if role.value == PATH_ROLE or role.value in HOST_ROLES
        }
        for contract in contracts
    }


def _folder(reading: str, argument: str) -> str | None:
    if reading.startswith("/"):
        return None
    if argument == "cwd":
        return "" if reading == "." else reading
    return posixpath.dirname(reading)


def _value(text: Any) -> Any:
    """An argument as read from the database: JSON text for a list, else the string."""
    if isinstance(text, str) and text.startswith("["):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def habits_from(
    rows: Iterable[Mapping[str, Any]],
    roles: Mapping[str, Mapping[str, str]],
    workspace_roots: tuple[str, ...],
) -> AgentHabits:
    """Habits from rows of ``{"tool": …, "<argument>": value}``."""
    calls = 0
    tools: set[str] = set()
    hosts: set[str] = set()
    folders: set[str] = set()
    for row in rows:
        calls += 1
        tools.add(row["tool"])
        for argument, role in roles.get(row["tool"], {}).items():
            value = _value(row.get(argument))
            if value is None:
                continue
            if role == PATH_ROLE:
                for reading in path_value_readings(value, workspace_roots) or ():
                    folder = _folder(reading, argument)
                    if folder is not None:
                        folders.add(folder)
            else:
                hosts.update(host_value_readings(value) or ())
    return AgentHabits(calls, frozenset(tools), frozenset(hosts), frozenset(folders))


def agent_habits(
    agent: Any, *, workspace_roots: tuple[str, ...], excluding: Any = None
) -> AgentHabits:
    """The habits of ``agent`` from its newest calls that succeeded."""
    from tools_app.models import Invocation, InvocationStatus

    roles = _roles()
    names = sorted({name for tool in roles.values() for name in tool if set(name) <= _SAFE_NAME})
    rows = Invocation.objects.filter(agent=agent, status=InvocationStatus.SUCCEEDED)
    if excluding is not None:
        rows = rows.exclude(id=excluding)
    limit = int(getattr(settings, "SYNTHORG_RISK_HISTORY_CALLS", HISTORY_CALLS_DEFAULT))
    read = {f"arg_{name}": KT(f"arguments__{name}") for name in names}
    values = rows.order_by("-created_at").annotate(**read).values_list("tool", *read)[:limit]
    found = ({"tool": row[0], **dict(zip(names, row[1:], strict=True))} for row in values)
    return habits_from(found, roles, workspace_roots)
