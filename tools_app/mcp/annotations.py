"""MCP tool annotations derived from a tool's contract (pure: no Django).

A client shows these hints to the person behind the agent and may ask before a
destructive or open-world call, so every hint errs on the side of caution: a tool
is only called additive, closed-world or idempotent when its contract says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# Action types whose calls only add to their environment (a new commit, branch,
# clone or memory entry, a fetched page) and never overwrite or remove anything.
ADDITIVE_ACTION_TYPES: Final = frozenset(
    {"vcs:branch", "vcs:clone", "vcs:commit", "knowledge:ingest", "external_data:request"}
)

# Categories whose tools act only on the agent's workspace, the console's own state
# or its configured database (the sandboxes give them no network); any other
# category, an upstream MCP server's included, reaches an open world (unless that
# server says its tool does not: ``closed_world_claimed``).
CLOSED_WORLD_CATEGORIES: Final = frozenset(
    {
        "file_system", "code_execution", "version_control", "database", "terminal",
        "memory", "discovery", "design", "analytics",
    }
)  # fmt: skip
OPEN_WORLD_SAFETY_CLASSES: Final = frozenset({"network", "financial"})
OPEN_WORLD_ACTION_PREFIXES: Final = ("comms:", "external_data:", "deploy:")
OPEN_WORLD_ACTION_TYPES: Final = frozenset({"vcs:push", "vcs:clone"})


@dataclass(frozen=True)
class ToolHints:
    """The four behaviour hints of the MCP ToolAnnotations."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


def tool_hints(
    *,
    category: str,
    action_type: str,
    safety_class: str,
    idempotent: bool,
    closed_world_claimed: bool = False,
) -> ToolHints:
    """The hints for a tool with this contract.

    A read-class tool changes nothing, so it is neither destructive nor anything
    but idempotent. Any other tool is destructive unless its action type is known
    to be additive; unknown categories and action types count as destructive and
    open-world. ``closed_world_claimed``: an upstream server says its tool reaches no
    open world (``openWorldHint: false``); that is passed on for its category, never
    against a class or action type that reaches out.
    """
    read_only = safety_class == "read"
    reaches_out = (
        safety_class in OPEN_WORLD_SAFETY_CLASSES
        or action_type in OPEN_WORLD_ACTION_TYPES
        or action_type.startswith(OPEN_WORLD_ACTION_PREFIXES)
    )
    open_world = reaches_out or (
        category not in CLOSED_WORLD_CATEGORIES and not closed_world_claimed
    )
    return ToolHints(
        read_only=read_only,
        destructive=not read_only and action_type not in ADDITIVE_ACTION_TYPES,
        idempotent=read_only or idempotent,
        open_world=open_world,
    )
