"""Reads about tools and invocations for services, views and the API."""

from __future__ import annotations

from typing import Any

from django.db import connection

from tools_app.bridge.selectors import unlisted_upstream_tools
from tools_app.contracts import ToolContract
from tools_app.models import Invocation, ToolDefinition
from tools_app.registry import builtin_catalog, tool_catalog, tool_view
from trust_app.models import Agent
from trust_app.policy import AgentPolicy, Outcome, decide, list_permitted, name_key

# Every agent call reads this: the query is compiled once per database backend.
_disabled_sql: dict[str, tuple[str, tuple[Any, ...]]] = {}


def disabled_tool_keys() -> frozenset[str]:
    """Tools an admin switched off (they stay registered and audited)."""
    sql = _disabled_sql.get(connection.vendor)
    if sql is None:
        query = ToolDefinition.objects.filter(enabled=False).values_list("name", flat=True).query
        sql = _disabled_sql[connection.vendor] = query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(*sql)
        return frozenset(name_key(name) for (name,) in cursor.fetchall())


def permitted_tools(policy: AgentPolicy) -> list[dict[str, Any]]:
    """L1 entries of the tools this agent may use, as GET /api/v1/tools/ lists them.

    An upstream MCP tool not on its pinned definition (held, rejected) is not listed.
    """
    catalog = tool_catalog()
    disabled = disabled_tool_keys()
    unlisted = unlisted_upstream_tools(catalog.implementations)
    views = [
        tool_view(c, enabled=name_key(c.name) not in disabled)
        for c in catalog
        if name_key(c.name) not in unlisted
    ]
    return [entry.as_dict() for entry in list_permitted(policy, views)]


def permitted_contract(policy: AgentPolicy, name: str) -> ToolContract | None:
    """The tool's contract when it exists, is enabled and this agent may use it; else None.

    None too for an upstream MCP tool not on its pinned definition (held, rejected).
    """
    catalog = tool_catalog()
    contract = catalog.contract(name)
    if contract is None or name_key(contract.name) in disabled_tool_keys():
        return None
    if name_key(contract.name) in unlisted_upstream_tools(
        {name_key(contract.name): catalog.implementation(contract.name)}
    ):
        return None
    if decide(policy, tool_view(contract)).outcome is Outcome.DENY:
        return None
    return agent_contract(policy, contract)


def agent_contract(policy: AgentPolicy, contract: ToolContract) -> ToolContract:
    """The contract as this agent sees it: a tool that tells each agent about its own
    grants (``disclosed``, e.g. the connections of ``external_data_request``) fills
    them in; any other tool's contract is the same for every agent."""
    disclose = getattr(builtin_catalog().implementation(contract.name), "disclosed", None)
    if disclose is None:
        return contract
    sub_constraints = policy.for_category(contract.category.value).constraints.model_dump(
        mode="json"
    )
    disclosed: ToolContract = disclose(contract, sub_constraints)
    return disclosed


def invocation_for_agent(agent: Agent, invocation_id: Any) -> Invocation | None:
    return (
        Invocation.objects.select_related("approval").filter(id=invocation_id, agent=agent).first()
    )
