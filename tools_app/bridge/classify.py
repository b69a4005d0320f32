"""PURE: an upstream tool as the console's typed contract (`<server>__<tool>`, category mcp).

The action type and safety class come from the admin: the server's config entry
(`tools.action_types`, `tools.safety_classes`). Until an admin classifies a tool, it is
a write (``code:write``, safety class ``write``), so it asks a person wherever the
agent's autonomy asks for writes. The server's annotations (``readOnlyHint``,
``destructiveHint``, …) are its claims: pinned with its definition, where admins read
them as claims, and never what a call needs.
"""

from __future__ import annotations

from typing import Any, Final

from common.config.mcp import McpToolRules
from tools_app.bridge.definitions import CATEGORY, UpstreamTool
from tools_app.contracts import ToolContract

WRITE_ACTION_TYPE: Final = "code:write"
WRITE_SAFETY_CLASS: Final = "write"
# Schema of a tool whose server declares no output schema: any object.
ANY_OBJECT: Final[dict[str, Any]] = {"type": "object"}
SUMMARY_LIMIT: Final = 200


def action_type_of(tool: UpstreamTool, rules: McpToolRules) -> str:
    """The admin's action type for ``tool``, else ``code:write`` (whatever its hints say)."""
    return rules.action_type_for(tool.name) or WRITE_ACTION_TYPE


def safety_class_of(tool: UpstreamTool, rules: McpToolRules) -> str:
    """The admin's safety class for ``tool``, else ``write`` (whatever its hints say)."""
    return rules.safety_class_for(tool.name) or WRITE_SAFETY_CLASS


def summary_of(tool: UpstreamTool) -> str:
    """One line for the L1 listing: the description's first line, else the title or name."""
    first = next((line.strip() for line in tool.description.splitlines() if line.strip()), "")
    summary = first or (tool.title or "").strip() or f"{tool.name} (from MCP server {tool.server})"
    if len(summary) > SUMMARY_LIMIT:
        summary = summary[: SUMMARY_LIMIT - 1].rstrip() + "…"
    return summary


def bridged_contract(tool: UpstreamTool, rules: McpToolRules) -> ToolContract:
    """The contract agents see for ``tool``; pydantic refuses a malformed one.

    The registry (``ToolRegistry.register``) still has to admit it: schemas compiled
    without remote ``$ref``, text scanned, look-alike names refused.
    """
    return ToolContract.model_validate(
        {
            "name": tool.contract_name,
            "category": CATEGORY,
            "action_type": action_type_of(tool, rules),
            "safety_class": safety_class_of(tool, rules),
            "input_schema": _plain(tool.input_schema),
            "output_schema": _plain(tool.output_schema) or dict(ANY_OBJECT),
            "summary": summary_of(tool),
            "description": tool.description,
            # An upstream hint is not trusted to make a retry after a lost worker safe.
            "idempotent": False,
            "idempotency": "optional",
        }
    )


def _plain(value: Any) -> Any:
    if value is None:
        return None
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
