"""Discovery tools: L1 listing within its budget, L2 loads with FIFO auto-unload, L3 resources."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from common.testing import RunningProcess
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tools_app.builtin.base import RefusalCode, ToolContext, ToolFailedError, ToolRefusedError
from tools_app.builtin.discovery.budget import estimate_tokens
from tools_app.builtin.discovery.tools import ListToolsTool, LoadToolResourceTool, LoadToolTool
from tools_app.registry import tool_catalog
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.protocol import Owner
from trust_app.models import Agent
from trust_app.services.agents import agent_create

# The agent API fixtures, shared with the API tests.
make_agent = api_fixtures.make_agent

LIST, LOAD, RESOURCE = ListToolsTool(), LoadToolTool(), LoadToolResourceTool()


def _agent(name: str, level: str = "standard") -> Agent:
    return agent_create(name=name, access_level=level).agent


def _context(
    agent: Agent, settings: Mapping[str, Any] | None = None, task_id: str | None = "task-1"
) -> ToolContext:
    # The discovery tools never touch the sandbox; the worker still hands one over.
    return ToolContext(
        agent_id=str(agent.id),
        agent_name=agent.name,
        workspace=Path(agent.workspace),
        sandbox=SubprocessSandbox(),
        owner=Owner(agent_id=str(agent.id)),
        task_id=task_id,
        settings=settings or {},
    )


def _refusal(call: Callable[[], object]) -> ToolRefusedError:
    with pytest.raises(ToolRefusedError) as caught:
        call()
    return caught.value


def _body_tokens(name: str) -> int:
    contract = tool_catalog().contract(name)
    assert contract is not None
    return estimate_tokens(contract.l2())


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_list_load_and_fetch_a_resource_through_the_pipeline(
    make_agent: Callable[..., AgentClient], celery_worker_process: RunningProcess
) -> None:
    client = make_agent("sandboxed")
    listed = client.call("list_tools", {}, wait=30, task_id="t-1").json()
    assert listed["status"] == "succeeded", listed
    names = {t["name"] for t in listed["result"]["structured"]["tools"]}
    assert {"list_tools", "load_tool", "memory_search"} <= names
    assert "sql_query" not in names  # the database category starts at restricted

    loaded = client.call("load_tool", {"tool_name": "memory_search"}, wait=30, task_id="t-1")
    body = loaded.json()
    assert body["status"] == "succeeded", body
    assert body["result"]["structured"]["tool"]["input_schema"]["required"] == ["query"]
    assert body["result"]["structured"]["loaded"] == ["memory_search"]

    guide = client.call(
        "load_tool_resource",
        {"tool_name": "load_tool", "resource_id": "disclosure-guide"},
        wait=30,
    ).json()
    assert guide["status"] == "succeeded", guide
    assert guide["result"]["structured"]["media_type"] == "text/markdown"


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_loading_a_tool_the_agent_may_not_use_is_refused_like_an_unknown_one(
    make_agent: Callable[..., AgentClient], celery_worker_process: RunningProcess
) -> None:
    client = make_agent("sandboxed", denied=["memory_recall"])
    answers = {
        name: client.call("load_tool", {"tool_name": name}, wait=30).json()
        for name in ("sql_query", "memory_recall", "no_such_tool")
    }
    for name, answer in answers.items():
        assert answer["status"] == "failed", answer
        assert answer["error"]["code"] == "INVALID_ARGUMENT"
        assert answer["error"]["message"] == (
            f"no tool named {name!r} is available to you; list_tools shows the ones you may use"
        )
    resource = client.call(
        "load_tool_resource", {"tool_name": "sql_query", "resource_id": "x"}, wait=30
    ).json()
    assert resource["error"]["code"] == "INVALID_ARGUMENT"


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_discovery_is_available_to_a_custom_agent_with_nothing_else(
    make_agent: Callable[..., AgentClient], celery_worker_process: RunningProcess
) -> None:
    client = make_agent("custom")
    listed = client.call("list_tools", {}, wait=30).json()
    assert listed["status"] == "succeeded", listed
    names = [t["name"] for t in listed["result"]["structured"]["tools"]]
    assert names == ["list_tools", "load_tool", "load_tool_resource"]


@pytest.mark.django_db
def test_the_l1_listing_stops_at_its_budget_and_pages_on() -> None:
    agent = _agent("disc-l1")
    full = LIST.run(_context(agent), {}).structured
    assert full is not None and full["truncated"] is False and full["next_offset"] is None
    everything = [t["name"] for t in full["tools"]]
    assert len(everything) > 5

    budget = estimate_tokens(full["tools"][0]) + estimate_tokens(full["tools"][1])
    seen: list[str] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = LIST.run(_context(agent, {"l1_token_budget": budget}), {"offset": offset}).structured
        assert page is not None and 1 <= len(page["tools"]) <= 2
        # Over the budget only when a single entry is larger than it (paging must move on).
        assert page["l1_tokens"] <= budget or len(page["tools"]) == 1
        seen.extend(t["name"] for t in page["tools"])
        offset, pages = page["next_offset"], pages + 1
    assert seen == everything and pages >= len(everything) // 2
    first = LIST.run(_context(agent, {"l1_token_budget": budget}), {}).structured
    assert first is not None and first["truncated"] is True and first["next_offset"] == 2


@pytest.mark.django_db
def test_the_l1_listing_filters_by_category() -> None:
    found = LIST.run(_context(_agent("disc-cat")), {"category": "memory"}).structured
    assert found is not None
    assert {t["name"] for t in found["tools"]} == {"memory_store", "memory_search", "memory_recall"}


@pytest.mark.django_db
def test_the_oldest_loaded_body_is_unloaded_first_past_the_threshold() -> None:
    agent = _agent("disc-l2")
    names = ["memory_store", "memory_search", "memory_recall", "list_tools"]
    sizes = {name: _body_tokens(name) for name in names}
    # Room for the three biggest at 100%, but the threshold is 80% of that.
    budget = sum(sorted(sizes.values())[-3:])
    settings = {"l2_token_budget": budget, "unload_threshold_percent": 80}
    ceiling = budget * 0.8
    expected: list[str] = []
    for name in names:
        result = LOAD.run(_context(agent, settings), {"tool_name": name}).structured
        assert result is not None
        expected = [n for n in expected if n != name] + [name]
        dropped = []
        while len(expected) > 1 and sum(sizes[n] for n in expected) > ceiling:
            dropped.append(expected.pop(0))
        assert result["loaded"] == expected and result["unloaded"] == dropped
        assert result["l2_tokens_used"] <= ceiling or len(expected) == 1
    LOAD.run(_context(agent, settings, task_id="other"), {"tool_name": "memory_store"})
    # Loading again moves a body to the newest place instead of adding it twice.
    again = LOAD.run(_context(agent, settings), {"tool_name": expected[0]}).structured
    assert again is not None and again["loaded"][-1] == expected[0]
    assert len(again["loaded"]) == len(set(again["loaded"]))
    # Each task has its own loaded set.
    other = LIST.run(_context(agent, task_id="other"), {}).structured
    assert other is not None and other["loaded"] == ["memory_store"]


@pytest.mark.django_db
def test_without_auto_unload_a_full_budget_is_refused() -> None:
    agent = _agent("disc-full")
    first, second = _body_tokens("memory_store"), _body_tokens("memory_search")
    settings = {"l2_token_budget": first + second - 1, "auto_unload_on_budget_pressure": False}
    LOAD.run(_context(agent, settings), {"tool_name": "memory_store"})
    refusal = _refusal(lambda: LOAD.run(_context(agent, settings), {"tool_name": "memory_search"}))
    assert refusal.code is RefusalCode.LIMIT_EXCEEDED and "memory_store" in refusal.reason
    listed = LIST.run(_context(agent), {}).structured
    assert listed is not None and listed["loaded"] == ["memory_store"]


@pytest.mark.django_db
def test_a_body_larger_than_the_whole_budget_is_refused() -> None:
    agent = _agent("disc-big")
    refusal = _refusal(
        lambda: LOAD.run(_context(agent, {"l2_token_budget": 10}), {"tool_name": "load_tool"})
    )
    assert refusal.code is RefusalCode.LIMIT_EXCEEDED


@pytest.mark.django_db
def test_an_unknown_resource_names_the_ones_the_tool_has() -> None:
    refusal = _refusal(
        lambda: RESOURCE.run(
            _context(_agent("disc-res")), {"tool_name": "load_tool", "resource_id": "nope"}
        )
    )
    assert refusal.code is RefusalCode.INVALID_ARGUMENT
    assert refusal.reason.endswith("it has: disclosure-guide")


@pytest.mark.django_db
def test_broken_budget_config_fails_closed() -> None:
    with pytest.raises(ToolFailedError) as caught:
        LOAD.run(
            _context(_agent("disc-cfg"), {"unload_threshold_percent": 0}),
            {"tool_name": "list_tools"},
        )
    assert caught.value.code == "CONFIG_INVALID"
