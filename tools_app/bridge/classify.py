"""PURE: an upstream tool as the console's typed contract (`<server>__<tool>`, category mcp).

The action type and safety class come from the server's config entry
(`tools.action_types`, `tools.safety_classes`), else from the tool's annotations
(``readOnlyHint: true`` is a read), else the safe side (a write, ``code:write``): an
upstream server's hints can only make a tool look more consequential than its
config says, never less, because the config is consulted first.
"""

from __future__ import annotations

from typing import Any, Final

from common.config.mcp import McpToolRules
from tools_app.bridge.definitions import CATEGORY, UpstreamTool
from tools_app.contracts import ToolContract

READ_ACTION_TYPE: Final = "code:read"
WRITE_ACTION_TYPE: Final = "code:write"
# Schema of a tool whose server declares no output schema: any object.
ANY_OBJECT: Final[dict[str, Any]] = {"type": "object"}
SUMMARY_LIMIT: Final = 200


def _read_only(tool: UpstreamTool) -> bool:
    return tool.annotations.get("readOnlyHint") is True


def action_type_of(tool: UpstreamTool, rules: McpToolRules) -> str:
    """The configured action type, else the annotations', else ``code:write``."""
    configured = rules.action_type_for(tool.name)
    if configured is not None:
        return configured
    return READ_ACTION_TYPE if _read_only(tool) else WRITE_ACTION_TYPE


def safety_class_of(tool: UpstreamTool, rules: McpToolRules) -> str:
    """The configured safety class, else ``read`` for a read-only hint, else ``write``."""
    configured = rules.safety_class_for(tool.name)
    if configured is not None:
        return configured
    return "read" if _read_only(tool) else "write"


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
