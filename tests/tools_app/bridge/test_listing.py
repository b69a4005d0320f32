"""Held means hidden, and no upstream hint decides for the console.

Real upstream servers (official SDK, stdio) list their tools; discovery's service records
them; the agents' listings are the console's own (the L1 list of ``GET /api/v1/tools/``,
the L2 body, the MCP ``tools/list``), and calls go through the real decision. Each
attack has its control beside it: a tool of the same server that is not held, or the
same hint with an admin's classification.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from common.config.mcp import McpServer
from common.settings_config import config_reload, synthorg_config
from tests.tools_app.bridge.upstream import SERVERS, listings
from tools_app.bridge.catalog import forget_records
from tools_app.bridge.definitions import UpstreamTool
from tools_app.bridge.pinning import upstream_pin_accept, upstream_pin_reject
from tools_app.bridge.services import bridge_discovery_record
from tools_app.mcp.server import mcp_tools_for
from tools_app.models import UpstreamToolPin, UpstreamToolRecord
from tools_app.selectors.invocations import permitted_contract, permitted_tools
from tools_app.services.invocation_submit import CallRequest, invocation_submit
from trust_app.models import Agent
from trust_app.selectors.agents import agent_policy
from trust_app.services.agents import agent_create, person_create

pytestmark = pytest.mark.django_db


def _entry(name: str, kind: str, tools: dict[str, Any] | None = None) -> dict[str, Any]:
    command = [sys.executable, str(SERVERS), kind]
    return {"name": name, "transport": "stdio", "command": command, "tools": tools or {}}


def _server(name: str, kind: str) -> McpServer:
    return McpServer.model_validate(_entry(name, kind))


def _record(server: McpServer, tools: list[UpstreamTool]) -> None:
    bridge_discovery_record(server=server, tools=tools)
    forget_records()


def _agent(autonomy: str = "semi") -> Agent:
    name = f"lister-{uuid.uuid4().hex[:8]}"
    return agent_create(name=name, access_level="standard", autonomy=autonomy).agent


def _shown(agent: Agent) -> dict[str, str]:
    """Every upstream tool the agent is shown, with what it reads of it (L1, L2 and MCP)."""
    policy = agent_policy(agent)
    rest = {e["name"]: e["summary"] for e in permitted_tools(policy) if "__" in e["name"]}
    mcp = {t.name: t.description or "" for t in mcp_tools_for(agent) if "__" in t.name}
    assert set(rest) == set(mcp), "REST and MCP list the same tools"
    for name in rest:
        contract = permitted_contract(policy, name)
        assert contract is not None, f"{name} is listed, so its L2 body is given"
        mcp[name] += contract.description
    return mcp


def _admin() -> Any:
    person_create(username="ada", role="admin", password=None)
    return get_user_model().objects.get(username="ada")


def test_a_pulled_tool_is_gone_from_every_listing_its_unchanged_neighbour_stays() -> None:
    first, pulled = listings("pp", "rug_pull_pair", times=2)
    server, agent = _server("pp", "rug_pull_pair"), _agent()
    _record(server, first)
    assert set(_shown(agent)) == {"pp__add_note", "pp__count_notes"}, "control: both pinned"

    _record(server, pulled)
    shown = _shown(agent)
    assert set(shown) == {"pp__count_notes"}, shown
    assert not any("id_rsa" in text for text in shown.values())
    assert permitted_contract(agent_policy(agent), "pp__add_note") is None, "no L2 body either"
    record = UpstreamToolRecord.objects.get(name="pp__add_note")
    assert record.contract is not None and "id_rsa" in record.contract["description"], (
        "admitted as a contract: only its pin keeps it out of sight"
    )


def test_a_rejected_tool_stays_hidden_an_accepted_one_is_shown_as_accepted() -> None:
    first, pulled = listings("rj", "rug_pull_pair", times=2)
    server, agent, admin = _server("rj", "rug_pull_pair"), _agent(), _admin()
    _record(server, first)
    _record(server, pulled)
    pin = UpstreamToolPin.objects.get(contract_name="rj__add_note")
    upstream_pin_reject(
        pin_id=pin.pk, person=admin, expected_hash=pin.candidate_hash, reason="exfiltration"
    )
    _record(server, pulled)
    assert set(_shown(agent)) == {"rj__count_notes"}, "rejected: still hidden"
    _record(server, first)  # the server goes back to the pinned definition
    assert "rj__add_note" in _shown(agent), "restored: shown again"
    assert "id_rsa" not in _shown(agent)["rj__add_note"]
    _record(server, pulled)
    assert "rj__add_note" not in _shown(agent), "changed again: hidden again"
    pin.refresh_from_db()
    upstream_pin_accept(
        pin_id=pin.pk, person=admin, expected_hash=pin.candidate_hash, reason="reviewed"
    )
    forget_records()
    assert "id_rsa" in _shown(agent)["rj__add_note"], "an admin's accepted definition is shown"


@pytest.mark.parametrize(
    ("kind", "held"),
    [("poisoned", "add_note"), ("homoglyph", "d\u0435lete_notes")],
)
def test_a_tool_held_on_first_sight_is_never_shown(kind: str, held: str) -> None:
    (tools,) = listings("fs", kind)
    agent = _agent()
    _record(_server("fs", kind), tools)
    assert set(_shown(agent)) == {"fs__count_notes"}, "control: its clean neighbour is shown"
    pin = UpstreamToolPin.objects.get(contract_name=f"fs__{held}")
    assert pin.status == "held" and not pin.pinned_hash
    assert UpstreamToolRecord.objects.get(name=f"fs__{held}").contract is not None


def _configure(settings: Any, tmp_path: Path, entry: dict[str, Any]) -> McpServer:
    """The config names the server (a call is refused for a server it does not name)."""
    path = tmp_path / "synthorg.yaml"
    path.write_text(json.dumps({"mcp_servers": [entry]}))
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()
    return synthorg_config().mcp_servers[0]


def test_a_read_only_hint_asks_a_person_the_admins_read_does_not(
    settings: Any, tmp_path: Path
) -> None:
    # Both tools claim every harmless hint there is; only count_notes is classified.
    classified = {
        "action_types": {"count_notes": "code:read"},
        "safety_classes": {"count_notes": "read"},
    }
    server = _configure(settings, tmp_path, _entry("cl", "claims", classified))
    (tools,) = listings("cl", "claims")
    assert all(t.annotations.get("readOnlyHint") is True for t in tools)
    _record(server, tools)
    agent = _agent("supervised")

    def status(tool: str) -> str:
        call = CallRequest(tool=tool, arguments={"text": "x"})
        return invocation_submit(agent=agent, call=call).invocation.status

    assert status("cl__search_notes") == "pending_approval", "a claim is not a read"
    assert status("cl__count_notes") != "pending_approval", "control: the admin's read"
    listed = {e["name"]: e for e in permitted_tools(agent_policy(agent))}
    searched, counted = listed["cl__search_notes"], listed["cl__count_notes"]
    assert (searched["action_type"], searched["safety_class"]) == ("code:write", "write")
    assert (counted["action_type"], counted["safety_class"]) == ("code:read", "read")
    hints = {t.name: t.annotations for t in mcp_tools_for(agent) if t.name.startswith("cl__")}
    assert hints["cl__search_notes"] is not None and hints["cl__count_notes"] is not None
    assert hints["cl__search_notes"].read_only_hint is False, "the console's hint, not the claim"
    assert hints["cl__count_notes"].read_only_hint is True


def test_the_servers_title_and_closed_world_claim_reach_agents_as_given() -> None:
    (tools,) = listings("tt", "claims")
    _record(_server("tt", "claims"), tools)
    listed = {t.name: t for t in mcp_tools_for(_agent()) if t.name.startswith("tt__")}
    counted, searched = listed["tt__count_notes"], listed["tt__search_notes"]
    assert counted.title == "Count the notes"
    assert counted.annotations is not None and counted.annotations.open_world_hint is False
    # Not a read for the console (unclassified), whatever it claims.
    assert counted.annotations.read_only_hint is False
    # Control: a tool with no title and no world claim gets none and the cautious hint.
    assert searched.title is None
    assert searched.annotations is not None and searched.annotations.open_world_hint is True
