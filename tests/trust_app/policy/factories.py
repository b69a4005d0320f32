"""Builders for agents and tools used across the policy tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trust_app.policy import (
    DEFAULT_ACTION_TYPE,
    AgentPolicy,
    SubConstraintOverrides,
    ToolCategory,
    ToolView,
    build_agent_policy,
)

WORKSPACE = "/srv/agents/alpha/workspace"

# Argument roles a well-formed tool of each category declares, so that the
# level/category table is not decided by a missing declaration.
CATEGORY_ROLES: Mapping[str, Mapping[str, str]] = {
    ToolCategory.FILE_SYSTEM: {"path": "path"},
    ToolCategory.WEB: {"url": "url"},
    ToolCategory.BROWSER: {"url": "url"},
    ToolCategory.EXTERNAL_DATA: {"url": "url"},
    ToolCategory.TERMINAL: {"command": "command"},
}
# Action types for the table: read-ish where the default would trip git access.
CATEGORY_ACTION: Mapping[str, str] = {
    **{str(k): v for k, v in DEFAULT_ACTION_TYPE.items()},
    ToolCategory.VERSION_CONTROL: "vcs:read",
    ToolCategory.MCP: "code:read",
    ToolCategory.OTHER: "code:read",
}


def tool(
    name: str = "read_file",
    *,
    category: str = "file_system",
    action_type: str | None = None,
    safety_class: str = "read",
    roles: Mapping[str, str] | None = None,
    isolation: str | None = "containerized",
    enabled: bool = True,
) -> ToolView:
    """A tool view with sensible defaults for its category."""
    return ToolView.build(
        name=name,
        category=category,
        action_type=action_type or CATEGORY_ACTION[category],
        safety_class=safety_class,
        summary=f"{name} summary",
        argument_roles=dict(CATEGORY_ROLES.get(category, {})) if roles is None else roles,
        isolation=isolation,
        enabled=enabled,
    )


def agent(
    level: str = "standard",
    *,
    allowed: Iterable[str] = (),
    denied: Iterable[str] = (),
    workspace: str | None = WORKSPACE,
    project_root: str | None = None,
    path_resolver: Any = None,
    **overrides: Any,
) -> AgentPolicy:
    """An agent at ``level`` with optional lists and sub-constraint overrides."""
    return build_agent_policy(
        name="alpha",
        level=level,
        allowed=allowed,
        denied=denied,
        overrides=SubConstraintOverrides(**overrides) if overrides else None,
        workspace=workspace,
        project_root=project_root,
        path_resolver=path_resolver,
    )
