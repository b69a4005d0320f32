"""Tool categories and safety classes.

The seventeen categories are the fifteen of the SynthOrg tool surface (file
system, code execution, version control, web, database, terminal, design,
communication, analytics, deployment, memory, browser, external data, desktop,
MCP servers) plus ``discovery`` (list_tools / load_tool / load_tool_resource,
always available whatever the access level) and ``other`` (a tool that fits no
category; it is permitted only at the elevated level or through an allowed
list, so an unclassified tool never slips in).
"""

from __future__ import annotations

from enum import StrEnum
from types import MappingProxyType
from typing import Final


class ToolCategory(StrEnum):
    """What kind of thing a tool touches; access levels gate on this."""

    FILE_SYSTEM = "file_system"
    CODE_EXECUTION = "code_execution"
    VERSION_CONTROL = "version_control"
    WEB = "web"
    DATABASE = "database"
    TERMINAL = "terminal"
    DESIGN = "design"
    COMMUNICATION = "communication"
    ANALYTICS = "analytics"
    DEPLOYMENT = "deployment"
    MEMORY = "memory"
    BROWSER = "browser"
    EXTERNAL_DATA = "external_data"
    DESKTOP = "desktop"
    MCP = "mcp"
    DISCOVERY = "discovery"
    OTHER = "other"


class SafetyClass(StrEnum):
    """How consequential a call is; approval defaults key off it."""

    READ = "read"
    WRITE = "write"
    NETWORK = "network"
    FINANCIAL = "financial"
    PRIVILEGED = "privileged"


ALL_CATEGORIES: Final[tuple[str, ...]] = tuple(c.value for c in ToolCategory)
ALL_SAFETY_CLASSES: Final[tuple[str, ...]] = tuple(c.value for c in SafetyClass)

# Default action type per category. The most consequential action of the
# category is chosen, so a tool that forgets to declare its action type is
# treated as the riskier kind (a read-only file tool declares ``code:read``).
# ``mcp`` and ``other`` have no default: such tools must declare one.
DEFAULT_ACTION_TYPE: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        ToolCategory.FILE_SYSTEM: "code:write",
        ToolCategory.CODE_EXECUTION: "test:run",
        ToolCategory.VERSION_CONTROL: "vcs:commit",
        ToolCategory.WEB: "comms:external",
        ToolCategory.DATABASE: "db:mutate",
        ToolCategory.TERMINAL: "code:write",
        ToolCategory.DESIGN: "docs:write",
        ToolCategory.COMMUNICATION: "comms:external",
        ToolCategory.ANALYTICS: "db:query",
        ToolCategory.DEPLOYMENT: "deploy:production",
        ToolCategory.MEMORY: "memory:read",
        ToolCategory.BROWSER: "browser:navigate",
        ToolCategory.EXTERNAL_DATA: "external_data:request",
        ToolCategory.DESKTOP: "desktop:launch",
        ToolCategory.DISCOVERY: "memory:read",
    }
)

# Categories whose tools reach other machines by nature; the level's network
# mode applies to them even when they declare no URL or host argument.
NETWORK_CATEGORIES: Final[frozenset[str]] = frozenset(
    {ToolCategory.WEB, ToolCategory.BROWSER, ToolCategory.EXTERNAL_DATA}
)
