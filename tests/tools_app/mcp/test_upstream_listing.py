"""What agents are shown of upstream tools, end to end: ``GET /api/v1/tools/`` and MCP
``tools/list`` from a real daphne, the official client, PostgreSQL.

Real upstream servers (official SDK, stdio) list their tools and discovery records them.
A tool held by its pin (changed after it was pinned, or held on first sight) is absent
from both listings while its unheld neighbour of the same server is listed; an upstream
title and ``openWorldHint: false`` reach the agent as the server gave them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from common.config.mcp import McpServer
from common.testing import wait_until
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.bridge.upstream import SERVERS, listings
from tests.tools_app.mcp.conftest import with_mcp
from tools_app.bridge.discovery import record_listing

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _server(name: str, kind: str) -> McpServer:
    command = [sys.executable, str(SERVERS), kind]
    return McpServer.model_validate({"name": name, "transport": "stdio", "command": command})


def _rest(client: AgentClient) -> dict[str, dict[str, Any]]:
    tools = client.http.get("/api/v1/tools/").json()["tools"]
    return {t["name"]: t for t in tools if "__" in t["name"]}


def _mcp(client: AgentClient) -> dict[str, Any]:
    async def work(session: Any) -> Any:
        return await session.list_tools()

    listed = with_mcp(str(client.http.base_url).rstrip("/"), client.token, work)
    return {t.name: t for t in listed.tools if "__" in t.name}


def _listed_as(client: AgentClient, expected: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both listings, once they name exactly ``expected`` (the web node's catalog is at
    most ``SYNTHORG_BRIDGE_CATALOG_TTL_SECONDS`` old)."""
    wait_until(lambda: set(_rest(client)) == expected, timeout=30, what=f"REST to list {expected}")
    rest, mcp = _rest(client), _mcp(client)
    assert set(mcp) == expected, sorted(mcp)
    return rest, mcp


def test_a_pulled_tool_leaves_both_listings_its_neighbour_stays(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    first, pulled = listings("pull", "rug_pull_pair", times=2)
    server = _server("pull", "rug_pull_pair")
    record_listing(server, first)
    _listed_as(client, {"pull__add_note", "pull__count_notes"})  # control: both pinned

    record_listing(server, pulled)
    rest, mcp = _listed_as(client, {"pull__count_notes"})
    assert "id_rsa" not in str(rest) and "id_rsa" not in str([t.description for t in mcp.values()])
    assert client.http.get("/api/v1/tools/pull__add_note/").status_code == 404
    assert client.http.get("/api/v1/tools/pull__count_notes/").status_code == 200


def test_tools_held_on_first_sight_are_never_listed(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    for name, kind in (("poison", "poisoned"), ("glyph", "homoglyph")):
        (tools,) = listings(name, kind)
        record_listing(_server(name, kind), tools)
    _, mcp = _listed_as(client, {"poison__count_notes", "glyph__count_notes"})
    assert not any("\u0435" in name for name in mcp), "no Cyrillic look-alike name"


def test_an_upstream_title_and_closed_world_claim_reach_the_agent(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    (tools,) = listings("said", "claims")
    record_listing(_server("said", "claims"), tools)
    _, mcp = _listed_as(client, {"said__count_notes", "said__search_notes"})
    counted, searched = mcp["said__count_notes"], mcp["said__search_notes"]
    assert counted.title == "Count the notes"
    assert counted.annotations.open_world_hint is False
    assert counted.annotations.read_only_hint is False, "a claim, not the console's read"
    assert counted.meta["synthorg/safety_class"] == "write"
    # Control: no title given, none shown; no closed-world claim, the cautious hint.
    assert searched.title is None and searched.annotations.open_world_hint is True
