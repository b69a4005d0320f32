"""Discovery tools: ``list_tools``, ``load_tool`` and ``load_tool_resource``.

Progressive disclosure (seed levels): ``list_tools`` answers L1 metadata of the
permitted tools within the L1 token budget, paged by ``offset``; ``load_tool``
answers a tool's L2 body and records it as loaded for the agent's task (auto-
unloading the oldest bodies past the threshold, see ``discovery_budget``);
``load_tool_resource`` answers one L3 resource. A tool the agent may not use is
refused exactly like one that does not exist (the API's 404).

Discovery is permitted at every access level (the decision engine grants the
discovery category to every level, custom included). Category discovery, action
type ``memory:read`` (the category's default: reading what the console knows),
safety class read. They run in the worker, not a sandbox: they read the console's
registry, policy and database (see ``discovery_state``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.base import RefusalCode, ToolContext, ToolOutcome, ToolRefusedError
from tools_app.builtin.discovery.budget import (
    LoadedBody,
    disclosure_settings,
    estimate_tokens,
    within_l1_budget,
)
from tools_app.builtin.discovery.state import (
    disclosure_load,
    loaded_bodies,
    permitted_contract_or_refuse,
    permitted_entries,
)
from tools_app.contracts import ToolContract, ToolResource

_TOOL_NAME: Final = {"type": "string", "minLength": 1, "maxLength": 64}
_NAMES: Final = {"type": "array", "items": {"type": "string"}}

DISCLOSURE_GUIDE: Final = """# Finding and loading tools

1. `list_tools` gives one line per tool you may use (name, category, action type,
   safety class, summary, cost tier). When `truncated` is true, call it again with
   `offset` set to `next_offset`.
2. `load_tool` gives a tool's full body: description, input and output JSON Schemas,
   examples and failure modes. Loaded bodies share a token budget per task; when it
   fills past its threshold the oldest bodies are unloaded (`unloaded` names them).
   Load a tool again when you need its body back.
3. `load_tool_resource` gives one longer resource a body lists under `resources`.

Token counts are estimates: about four characters of JSON per token.
"""

LIST_TOOLS_CONTRACT: Final = ToolContract(
    name="list_tools",
    category=ToolCategory.DISCOVERY,
    action_type="memory:read",
    safety_class=SafetyClass.READ,
    idempotent=True,
    summary="List the tools you may use, one line each (L1).",
    description=(
        "Returns name, category, action type, safety class, summary and cost tier of "
        "each tool you may use, within the L1 token budget. `category` narrows the list; "
        "when `truncated` is true, call again with `offset` = `next_offset`. `loaded` "
        "names the tool bodies loaded in this task."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "category": {"type": "string", "maxLength": 64},
            "offset": {"type": "integer", "minimum": 0, "maximum": 100_000},
        },
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "tools": {"type": "array", "items": {"type": "object"}},
            "total": {"type": "integer"},
            "offset": {"type": "integer"},
            "next_offset": {"type": ["integer", "null"]},
            "truncated": {"type": "boolean"},
            "l1_tokens": {"type": "integer"},
            "l1_token_budget": {"type": "integer"},
            "loaded": _NAMES,
        },
        "required": ["tools", "total", "truncated", "next_offset", "loaded"],
        "additionalProperties": False,
    },
)

LOAD_TOOL_CONTRACT: Final = ToolContract(
    name="load_tool",
    category=ToolCategory.DISCOVERY,
    action_type="memory:read",
    safety_class=SafetyClass.READ,
    idempotent=True,
    summary="Load a tool's full definition (L2): schemas, examples, failure modes.",
    description=(
        "Returns the full body of a tool you may use and marks it loaded for this task. "
        "Bodies share the L2 token budget; past its threshold the oldest loaded bodies are "
        "unloaded first and named in `unloaded`."
    ),
    input_schema={
        "type": "object",
        "properties": {"tool_name": _TOOL_NAME},
        "required": ["tool_name"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "tool": {"type": "object"},
            "tokens": {"type": "integer"},
            "loaded": _NAMES,
            "unloaded": _NAMES,
            "l2_tokens_used": {"type": "integer"},
            "l2_token_budget": {"type": "integer"},
        },
        "required": ["tool", "tokens", "loaded", "unloaded", "l2_tokens_used"],
        "additionalProperties": False,
    },
    failure_modes=(
        "INVALID_ARGUMENT: no tool of that name is available to you.",
        "LIMIT_EXCEEDED: the body alone is larger than the L2 budget, or automatic "
        "unloading is off and the budget is full.",
    ),
    resources=(
        ToolResource(id="disclosure-guide", media_type="text/markdown", content=DISCLOSURE_GUIDE),
    ),
)

LOAD_TOOL_RESOURCE_CONTRACT: Final = ToolContract(
    name="load_tool_resource",
    category=ToolCategory.DISCOVERY,
    action_type="memory:read",
    safety_class=SafetyClass.READ,
    idempotent=True,
    summary="Fetch one resource (L3) a tool's body lists: a guide, sample or trace.",
    description=(
        "Returns the resource `resource_id` of a tool you may use, as listed under "
        "`resources` in its body. Resources are never loaded on their own."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "tool_name": _TOOL_NAME,
            "resource_id": {"type": "string", "minLength": 1, "maxLength": 128},
        },
        "required": ["tool_name", "resource_id"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "tool": {"type": "string"},
            "id": {"type": "string"},
            "media_type": {"type": "string"},
            "content": {"type": "string"},
            "tokens": {"type": "integer"},
        },
        "required": ["tool", "id", "media_type", "content", "tokens"],
        "additionalProperties": False,
    },
    failure_modes=(
        "INVALID_ARGUMENT: no tool of that name is available to you, or it has no such "
        "resource (the reason lists the ones it has).",
    ),
)


class ListToolsTool:
    """``list_tools``: L1 metadata of the permitted tools, within the L1 budget."""

    contract: ToolContract = LIST_TOOLS_CONTRACT

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Filter, skip to ``offset``, then take entries while the budget lasts."""
        budget = disclosure_settings(context.settings).l1_token_budget
        entries = permitted_entries(context.agent_id)
        category = arguments.get("category")
        if category:
            entries = [e for e in entries if e["category"] == category]
        offset = int(arguments.get("offset", 0))
        chosen, used = within_l1_budget(entries[offset:], budget)
        end = offset + len(chosen)
        truncated = end < len(entries)
        loaded = [b.name for b in loaded_bodies(context.agent_id, context.task_id)]
        lines = [
            f"{e['name']} [{e['category']}, {e['safety_class']}]: {e['summary']}" for e in chosen
        ]
        if truncated:
            lines.append(f"… {len(entries) - end} more: call list_tools with offset={end}")
        return ToolOutcome(
            content="\n".join(lines) or "no tools",
            structured={
                "tools": chosen,
                "total": len(entries),
                "offset": offset,
                "next_offset": end if truncated else None,
                "truncated": truncated,
                "l1_tokens": used,
                "l1_token_budget": budget,
                "loaded": loaded,
            },
            truncated=truncated,
        )


class LoadToolTool:
    """``load_tool``: one permitted tool's L2 body, recorded as loaded for the task."""

    contract: ToolContract = LOAD_TOOL_CONTRACT

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Refuse a tool the agent may not use like an unknown one; then spend the budget."""
        budget = disclosure_settings(context.settings)
        contract = permitted_contract_or_refuse(context.agent_id, str(arguments.get("tool_name")))
        body = contract.l2()
        tokens = estimate_tokens(body)
        result = disclosure_load(
            agent_id=context.agent_id,
            task_id=context.task_id,
            body=LoadedBody(name=contract.name, tokens=tokens),
            budget=budget,
        )
        note = f" (unloaded: {', '.join(result.unloaded)})" if result.unloaded else ""
        return ToolOutcome(
            content=f"loaded {contract.name}, about {tokens} tokens{note}\n{contract.description}",
            structured={
                "tool": body,
                "tokens": tokens,
                "loaded": [b.name for b in result.loaded],
                "unloaded": list(result.unloaded),
                "l2_tokens_used": result.tokens_used,
                "l2_token_budget": budget.l2_token_budget,
            },
        )


class LoadToolResourceTool:
    """``load_tool_resource``: one L3 resource of a permitted tool."""

    contract: ToolContract = LOAD_TOOL_RESOURCE_CONTRACT

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """The resource by id; an unknown id names the ones the tool has."""
        contract = permitted_contract_or_refuse(context.agent_id, str(arguments.get("tool_name")))
        resource_id = str(arguments.get("resource_id"))
        resource = contract.resource(resource_id)
        if resource is None:
            have = ", ".join(r.id for r in contract.resources) or "none"
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT,
                f"{contract.name} has no resource {resource_id!r}; it has: {have}",
            )
        return ToolOutcome(
            content=resource.content,
            structured={
                "tool": contract.name,
                "id": resource.id,
                "media_type": resource.media_type,
                "content": resource.content,
                "tokens": estimate_tokens(resource.content),
            },
        )


TOOLS: Final = (ListToolsTool(), LoadToolTool(), LoadToolResourceTool())
