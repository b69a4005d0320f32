"""Reads and writes of agent memories: every query is scoped to the calling agent.

Kept apart from the tool contracts so the ORM work is in one place. The memory tools
touch the console's database, not the outside world, so they run in the worker
process (which has Django set up) rather than in a sandbox: a sandbox would need
the console's database credentials, which no agent-side process may hold.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector
from django.db import connection, transaction
from django.db.models import QuerySet

from tools_app.models import AgentMemory
from tools_app.models.memory import SEARCH_CONFIG
from trust_app.models import Agent


class MemoryLimitReachedError(Exception):
    """The agent already holds as many memories as the config allows."""


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """One memory as the tools return it."""

    id: str
    content: str
    tags: list[str]
    created_at: str
    rank: float | None = None

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "id": self.id,
            "content": self.content,
            "tags": self.tags,
            "created_at": self.created_at,
        }
        if self.rank is not None:
            found["rank"] = self.rank
        return found


def _hit(memory: AgentMemory, rank: float | None = None) -> MemoryHit:
    return MemoryHit(
        id=str(memory.id),
        content=memory.content,
        tags=list(memory.tags or []),
        created_at=memory.created_at.isoformat(),
        rank=rank,
    )


def memory_save(
    *, agent_id: str, content: str, tags: list[str], task_id: str | None, max_memories: int
) -> MemoryHit:
    """Store one memory for the agent; MemoryLimitReachedError when it holds the maximum.

    The agent row is locked while counting so two concurrent stores cannot both pass
    the limit check.
    """
    with transaction.atomic():
        agent = Agent.objects.select_for_update(no_key=True).get(id=agent_id)
        if AgentMemory.objects.filter(agent=agent).count() >= max_memories:
            raise MemoryLimitReachedError
        memory = AgentMemory.objects.create(
            agent=agent, content=content, tags=tags, task_id=task_id or ""
        )
    return _hit(memory)


def memory_get(*, agent_id: str, memory_id: str) -> MemoryHit | None:
    """The agent's own memory with this id, or None (also for another agent's id)."""
    try:
        key = uuid.UUID(memory_id)
    except ValueError:
        return None
    memory = AgentMemory.objects.filter(agent_id=agent_id, id=key).first()
    return _hit(memory) if memory is not None else None


def _tagged(queryset: QuerySet[AgentMemory], tags: list[str]) -> QuerySet[AgentMemory]:
    # JSON containment on PostgreSQL. SQLite has no JSON containment lookup; tags are
    # restricted to [A-Za-z0-9_.:-], so the quoted tag inside the stored JSON text is
    # an exact element match there.
    for tag in tags:
        if connection.vendor == "postgresql":
            queryset = queryset.filter(tags__contains=[tag])
        else:
            queryset = queryset.filter(tags__icontains=f'"{tag}"')
    return queryset


def memory_find(*, agent_id: str, query: str, tags: list[str], limit: int) -> list[MemoryHit]:
    """The agent's memories matching ``query``, best first; newest first on SQLite."""
    own = _tagged(AgentMemory.objects.filter(agent_id=agent_id), tags)
    if not query.strip():
        return [_hit(m) for m in own.order_by("-created_at")[:limit]]
    if connection.vendor == "postgresql":
        vector = SearchVector("content", config=SEARCH_CONFIG)
        search = SearchQuery(query, search_type="websearch", config=SEARCH_CONFIG)
        ranked = (
            own.annotate(document=vector, rank=SearchRank(vector, search))
            .filter(document=search)
            .order_by("-rank", "-created_at")[:limit]
        )
        return [_hit(m, round(float(m.rank), 6)) for m in ranked]
    terms = query.split()
    matching = own
    for term in terms:
        matching = matching.filter(content__icontains=term)
    return [_hit(m) for m in matching.order_by("-created_at")[:limit]]
