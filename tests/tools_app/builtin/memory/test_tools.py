"""Memory tools: per-agent notes in the console's database, searched in full text."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from common.testing import RunningProcess
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tools_app.builtin.base import RefusalCode, ToolContext, ToolRefusedError
from tools_app.builtin.memory.records import memory_find
from tools_app.builtin.memory.tools import MemoryRecallTool, MemorySearchTool, MemoryStoreTool
from tools_app.models import AgentMemory
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.protocol import Owner
from trust_app.models import Agent
from trust_app.services.agents import agent_create

# The agent API fixtures, shared with the API tests.
make_agent = api_fixtures.make_agent

STORE, SEARCH, RECALL = MemoryStoreTool(), MemorySearchTool(), MemoryRecallTool()


def _agent(name: str) -> Agent:
    return agent_create(name=name, access_level="sandboxed").agent


def _context(agent: Agent, settings: Mapping[str, Any] | None = None) -> ToolContext:
    # The memory tools never touch the sandbox; the worker still hands one over.
    return ToolContext(
        agent_id=str(agent.id),
        agent_name=agent.name,
        workspace=Path(agent.workspace),
        sandbox=SubprocessSandbox(),
        owner=Owner(agent_id=str(agent.id)),
        task_id="task-1",
        settings=settings or {},
    )


def _refusal(call: Callable[[], object]) -> ToolRefusedError:
    with pytest.raises(ToolRefusedError) as caught:
        call()
    return caught.value


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_store_search_and_recall_through_the_pipeline(
    make_agent: Callable[..., AgentClient], celery_worker_process: RunningProcess
) -> None:
    client = make_agent("sandboxed")
    stored = client.call(
        "memory_store",
        {"content": "The staging database migrates every Tuesday", "tags": ["ops"]},
        wait=30,
    ).json()
    assert stored["status"] == "succeeded", stored
    memory_id = stored["result"]["structured"]["memory"]["id"]

    found = client.call("memory_search", {"query": "migration tuesday"}, wait=30).json()
    assert found["status"] == "succeeded", found
    assert [r["id"] for r in found["result"]["structured"]["results"]] == [memory_id]

    recalled = client.call("memory_recall", {"id": memory_id}, wait=30).json()
    assert recalled["status"] == "succeeded", recalled
    assert recalled["result"]["structured"]["memory"]["content"].startswith("The staging")


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_an_agent_cannot_recall_or_find_another_agents_memory(
    make_agent: Callable[..., AgentClient], celery_worker_process: RunningProcess
) -> None:
    owner, intruder = make_agent("sandboxed"), make_agent("sandboxed")
    stored = owner.call("memory_store", {"content": "owner's private plan"}, wait=30).json()
    memory_id = stored["result"]["structured"]["memory"]["id"]

    recalled = intruder.call("memory_recall", {"id": memory_id}, wait=30).json()
    assert recalled["status"] == "failed"
    assert recalled["error"]["code"] == "INVALID_ARGUMENT"
    assert "private plan" not in str(recalled)
    searched = intruder.call("memory_search", {"query": "private plan"}, wait=30).json()
    assert searched["result"]["structured"]["results"] == []


@pytest.mark.django_db
def test_another_agents_id_is_answered_like_an_unknown_one() -> None:
    alice, bob = _agent("mem-alice"), _agent("mem-bob")
    memory_id = STORE.run(_context(alice), {"content": "alice only"}).structured["memory"]["id"]  # type: ignore[index]
    foreign = _refusal(lambda: RECALL.run(_context(bob), {"id": memory_id}))
    unknown = _refusal(
        lambda: RECALL.run(_context(bob), {"id": "00000000-0000-0000-0000-000000000000"})
    )
    assert foreign.code is unknown.code is RefusalCode.INVALID_ARGUMENT
    assert foreign.reason.replace(memory_id, "X") == unknown.reason.replace(
        "00000000-0000-0000-0000-000000000000", "X"
    )
    assert _refusal(lambda: RECALL.run(_context(bob), {"id": "not-a-uuid"})).code is (
        RefusalCode.INVALID_ARGUMENT
    )


@pytest.mark.django_db
def test_size_and_count_limits_come_from_settings() -> None:
    agent = _agent("mem-limits")
    settings = {"max_content_chars": 10, "max_memories_per_agent": 2, "max_tags": 1}
    assert (
        _refusal(lambda: STORE.run(_context(agent, settings), {"content": "x" * 11})).code
        is RefusalCode.LIMIT_EXCEEDED
    )
    assert (
        _refusal(
            lambda: STORE.run(_context(agent, settings), {"content": "x", "tags": ["a", "b"]})
        ).code
        is RefusalCode.LIMIT_EXCEEDED
    )
    STORE.run(_context(agent, settings), {"content": "one"})
    STORE.run(_context(agent, settings), {"content": "two"})
    third = _refusal(lambda: STORE.run(_context(agent, settings), {"content": "three"}))
    assert third.code is RefusalCode.LIMIT_EXCEEDED and "2 memories" in third.reason
    assert AgentMemory.objects.filter(agent=agent).count() == 2
    assert (
        _refusal(lambda: STORE.run(_context(agent), {"content": "nul\x00byte"})).code
        is RefusalCode.INVALID_ARGUMENT
    )


@pytest.mark.django_db
def test_search_ranks_filters_by_tag_and_flags_truncation() -> None:
    agent = _agent("mem-search")
    context = _context(agent, {"max_results": 2})
    for text, tags in (
        ("deploy the billing service on friday", ["deploy"]),
        ("billing invoices are exported nightly", ["billing"]),
        ("the billing service deploys need a billing review", ["deploy"]),
        ("lunch menu", []),
    ):
        STORE.run(context, {"content": text, "tags": tags})

    found = SEARCH.run(context, {"query": "billing"}).structured
    assert found is not None and found["truncated"] is True and len(found["results"]) == 2
    tagged = SEARCH.run(context, {"query": "billing", "tags": ["deploy"]}).structured
    assert tagged is not None
    assert {r["content"] for r in tagged["results"]} == {
        "deploy the billing service on friday",
        "the billing service deploys need a billing review",
    }
    # Stemming: "deploying" finds "deploy" and "deploys" on PostgreSQL.
    stemmed = SEARCH.run(context, {"query": "deploying", "limit": 2}).structured
    assert stemmed is not None and len(stemmed["results"]) == 2
    assert stemmed["results"][0]["content"].startswith("the billing service deploys")
    assert _refusal(lambda: SEARCH.run(context, {"query": "x", "limit": 3})).code is (
        RefusalCode.LIMIT_EXCEEDED
    )


@pytest.mark.django_db
def test_full_text_search_uses_the_expression_its_gin_index_is_built_on() -> None:
    """The planner can only use the index when the query's expression is the same."""
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'tools_memory_content_fts'"
        )
        (definition,) = cursor.fetchone()
    expression = "to_tsvector('english'::regconfig, COALESCE(content, ''::text))"
    assert "USING gin" in definition and expression in definition, definition
    agent = _agent("mem-plan")
    with CaptureQueriesContext(connection) as queries:
        memory_find(agent_id=str(agent.id), query="anything", tags=[], limit=5)
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + queries.captured_queries[-1]["sql"])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert f"{expression} @@" in plan, plan
