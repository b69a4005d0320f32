"""Memory tools: ``memory_store``, ``memory_search`` and ``memory_recall``.

Each agent has its own memory, kept in the console's database (``AgentMemory``);
every read is filtered on the calling agent, so another agent's memory is as
invisible as one that does not exist, even when its id is known. Search is
full-text on PostgreSQL (English stemming, ``websearch`` syntax, ranked) and a
case-insensitive match of every word on SQLite.

Why no sandbox: these tools read and write the console's own tables, which only the
worker process can reach; they never run agent-supplied code or touch agent files,
so they run in the worker like the web tools (the memory category's backend is not
used).

Settings (``tools.<tool name>``; all optional): ``memory_store`` reads
``max_content_chars`` (8000), ``max_tags`` (16) and ``max_memories_per_agent``
(10000); ``memory_search`` reads ``max_results`` (50).

Action types: reads are ``memory:read``. Storing is ``knowledge:ingest`` — the
built-in taxonomy has no ``memory:write``, and ingesting knowledge the agent will
later recall is what a store is; policies that gate writes to an agent's knowledge
therefore gate it, while pure reads stay ``memory:read``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.memory.records import (
    MemoryLimitReachedError,
    memory_find,
    memory_get,
    memory_save,
)
from tools_app.builtin.memory.settings import (
    DEFAULT_MAX_CONTENT_CHARS,
    DEFAULT_MAX_MEMORIES,
    DEFAULT_MAX_RESULTS,
    DEFAULT_MAX_TAGS,
)
from tools_app.contracts import ToolContract

# Tags are plain labels; the narrow alphabet also keeps the SQLite tag match exact.
TAG_PATTERN: Final = r"^[A-Za-z0-9_.:\-]{1,64}$"
_TAG_RE: Final = re.compile(TAG_PATTERN)

_TAGS_SCHEMA: Final = {
    "type": "array",
    "items": {"type": "string", "pattern": TAG_PATTERN},
    "maxItems": 64,
    "uniqueItems": True,
}
_MEMORY_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "content": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "created_at": {"type": "string"},
        "rank": {"type": "number"},
    },
    "required": ["id", "content", "tags", "created_at"],
    "additionalProperties": False,
}

MEMORY_STORE_CONTRACT: Final = ToolContract(
    name="memory_store",
    category=ToolCategory.MEMORY,
    action_type="knowledge:ingest",
    safety_class=SafetyClass.WRITE,
    summary="Remember a note for later; returns its id.",
    description=(
        "Stores `content` (with optional `tags`) in this agent's own memory, kept by the "
        "console. Only this agent can search or recall it. Returns the new memory's id."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "content": {"type": "string", "minLength": 1, "maxLength": 1_000_000},
            "tags": _TAGS_SCHEMA,
        },
        "required": ["content"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {"memory": _MEMORY_SCHEMA},
        "required": ["memory"],
    },
    failure_modes=(
        "LIMIT_EXCEEDED: the content is longer than allowed, too many tags, or the agent "
        "already holds the maximum number of memories.",
        "INVALID_ARGUMENT: empty content, a NUL byte, or a malformed tag.",
    ),
)

MEMORY_SEARCH_CONTRACT: Final = ToolContract(
    name="memory_search",
    category=ToolCategory.MEMORY,
    action_type="memory:read",
    safety_class=SafetyClass.READ,
    idempotent=True,
    summary="Search this agent's memories by words and tags.",
    description=(
        "Full-text search over this agent's memories (web-search syntax: words, "
        '"quoted phrases", -excluded), best match first; `tags` keeps only memories '
        "carrying all of them. An empty query lists the newest memories."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "maxLength": 1000},
            "tags": _TAGS_SCHEMA,
            "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "results": {"type": "array", "items": _MEMORY_SCHEMA},
            "truncated": {"type": "boolean"},
        },
        "required": ["results", "truncated"],
    },
    failure_modes=("LIMIT_EXCEEDED: the limit asked for is over the configured maximum.",),
)

MEMORY_RECALL_CONTRACT: Final = ToolContract(
    name="memory_recall",
    category=ToolCategory.MEMORY,
    action_type="memory:read",
    safety_class=SafetyClass.READ,
    idempotent=True,
    summary="Recall one of this agent's memories by its id.",
    description="Returns the memory with this id when it belongs to this agent.",
    input_schema={
        "type": "object",
        "properties": {"id": {"type": "string", "minLength": 1, "maxLength": 64}},
        "required": ["id"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {"memory": _MEMORY_SCHEMA},
        "required": ["memory"],
    },
    failure_modes=("INVALID_ARGUMENT: no memory of this agent has that id.",),
)


def positive_int(settings: Mapping[str, Any], key: str, default: int) -> int:
    """A positive integer setting; a bad value in the config fails the call, closed."""
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolFailedError(
            f"setting {key!r} must be a positive integer, not {value!r}", code="CONFIG_INVALID"
        )
    return value


def _tags(arguments: Mapping[str, Any], limit: int) -> list[str]:
    tags = arguments.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) and _TAG_RE.match(t) for t in tags):
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, f"tags must be strings matching {TAG_PATTERN}"
        )
    if len(tags) > limit:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED, f"{len(tags)} tags given; at most {limit} are allowed"
        )
    return list(dict.fromkeys(tags))


class MemoryStoreTool:
    """``memory_store``: one note into the calling agent's memory."""

    contract: ToolContract = MEMORY_STORE_CONTRACT

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the limits, then store the note for this agent."""
        settings = context.settings
        max_chars = positive_int(settings, "max_content_chars", DEFAULT_MAX_CONTENT_CHARS)
        content = arguments.get("content")
        if not isinstance(content, str) or not content.strip():
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "content must not be empty")
        if "\x00" in content:
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "content contains a NUL byte")
        if len(content) > max_chars:
            raise ToolRefusedError(
                RefusalCode.LIMIT_EXCEEDED,
                f"content is {len(content)} characters; the limit is {max_chars}",
            )
        tags = _tags(arguments, positive_int(settings, "max_tags", DEFAULT_MAX_TAGS))
        max_memories = positive_int(settings, "max_memories_per_agent", DEFAULT_MAX_MEMORIES)
        try:
            memory = memory_save(
                agent_id=context.agent_id,
                content=content,
                tags=tags,
                task_id=context.task_id,
                max_memories=max_memories,
            )
        except MemoryLimitReachedError:
            raise ToolRefusedError(
                RefusalCode.LIMIT_EXCEEDED,
                f"this agent already holds {max_memories} memories, the configured maximum",
            ) from None
        return ToolOutcome(
            content=f"stored memory {memory.id}", structured={"memory": memory.as_dict()}
        )


class MemorySearchTool:
    """``memory_search``: the calling agent's memories matching words and tags."""

    contract: ToolContract = MEMORY_SEARCH_CONTRACT

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Search, asking for one more than the limit to know whether there were more."""
        max_results = positive_int(context.settings, "max_results", DEFAULT_MAX_RESULTS)
        limit = arguments.get("limit", max_results)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "limit must be a positive integer")
        if limit > max_results:
            raise ToolRefusedError(
                RefusalCode.LIMIT_EXCEEDED, f"limit {limit} is over the maximum of {max_results}"
            )
        query = arguments.get("query", "")
        if not isinstance(query, str) or "\x00" in query:
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "query must be text without NUL")
        hits = memory_find(
            agent_id=context.agent_id,
            query=query,
            tags=_tags(arguments, DEFAULT_MAX_TAGS * 4),
            limit=limit + 1,
        )
        truncated = len(hits) > limit
        results = [h.as_dict() for h in hits[:limit]]
        lines = [f"{r['id']}: {r['content']}" for r in results]
        return ToolOutcome(
            content="\n".join(lines) or "no memories match",
            structured={"results": results, "truncated": truncated},
            truncated=truncated,
        )


class MemoryRecallTool:
    """``memory_recall``: one memory by id, only when it is the calling agent's."""

    contract: ToolContract = MEMORY_RECALL_CONTRACT

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Another agent's id is answered exactly like an unknown one."""
        memory_id = str(arguments.get("id", ""))
        memory = memory_get(agent_id=context.agent_id, memory_id=memory_id)
        if memory is None:
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT, f"you have no memory with id {memory_id!r}"
            )
        return ToolOutcome(content=memory.content, structured={"memory": memory.as_dict()})


TOOLS: Final = (MemoryStoreTool(), MemorySearchTool(), MemoryRecallTool())
