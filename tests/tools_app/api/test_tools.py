"""Progressive disclosure over REST: L1 lists only permitted tools, L2 and L3 on demand."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from audit_app.models import AuditEvent
from audit_app.record import Actor
from tests.tools_app.api.conftest import AgentClient
from tools_app.models import ToolDefinition
from tools_app.registry import tool_catalog
from tools_app.services.tool_registry import tool_enabled_set
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_l1_lists_exactly_the_permitted_tools(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent(denied=["test_echo"])
    tools = client.http.get("/api/v1/tools/").json()["tools"]
    names = {t["name"] for t in tools}
    assert "test_echo" not in names
    assert "test_counter" in names
    for entry in tools:
        assert set(entry) == {
            "name",
            "category",
            "action_type",
            "safety_class",
            "summary",
            "cost_tier",
        }


def test_l2_gives_the_contract_and_404_when_not_permitted(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent(denied=["test_echo"])
    body = client.http.get("/api/v1/tools/test_counter/").json()
    contract = tool_catalog().contract("test_counter")
    assert contract is not None
    assert body["definition_hash"] == contract.definition_hash
    assert body["input_schema"]["type"] == "object"
    for missing in ("test_echo", "no_such_tool"):
        response = client.http.get(f"/api/v1/tools/{missing}/")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


def test_a_disabled_tool_disappears_and_cannot_be_called(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    admin = person_create(username="toolsadmin", role="admin", password=None)
    tool_enabled_set(name="test_echo", enabled=False, actor=Actor.person(admin), reason="test")
    assert AuditEvent.objects.filter(kind="tool.disabled", tool="test_echo").exists()
    names = {t["name"] for t in client.http.get("/api/v1/tools/").json()["tools"]}
    assert "test_echo" not in names
    assert client.call("test_echo", {"text": "x"}).status_code == 404


def test_unknown_resource_is_404(make_agent: Callable[..., AgentClient]) -> None:
    response = make_agent().http.get("/api/v1/tools/test_echo/resources/guide/")
    assert response.status_code == 404


def test_the_registry_table_holds_every_tool_with_its_hash() -> None:
    rows = dict(ToolDefinition.objects.values_list("name", "definition_hash"))
    for contract in tool_catalog():
        assert rows[contract.name] == contract.definition_hash
