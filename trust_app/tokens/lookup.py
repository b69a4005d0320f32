"""The agent-token lookup of every agent call, as one SQL statement built once.

Compiling the ORM query (the token, its agent and the agent's permissions)
cost more than running it, on every call. The statement is built from the
models' metadata the first time it is needed on a database backend, and its
row becomes the instances ``select_related`` would have made (common.db_rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connections

from common.db_rows import RowShape
from trust_app.models import Agent, AgentPermissions, AgentToken


@dataclass(frozen=True)
class FoundToken:
    token: AgentToken
    agent: Agent

    @property
    def token_id(self) -> Any:
        return self.token.pk

    @property
    def last_used_at(self) -> datetime | None:
        return self.token.last_used_at


@dataclass(frozen=True)
class _Statement:
    sql: str
    shape: RowShape


_statements: dict[str, _Statement] = {}


def _column(model: type[Any], name: str) -> str:
    return str(getattr(model._meta.get_field(name), "column", name))


def _statement(using: str) -> _Statement:
    vendor = connections[using].vendor
    found = _statements.get(vendor)
    if found is not None:
        return found
    shape = RowShape([(AgentToken, "t"), (Agent, "a"), (AgentPermissions, "p")], using)
    q = shape.quote
    sql = (
        f"SELECT {shape.select_list()} FROM {q(AgentToken._meta.db_table)} t"  # noqa: S608
        f" INNER JOIN {q(Agent._meta.db_table)} a"
        f" ON a.{q(_column(Agent, 'id'))} = t.{q(_column(AgentToken, 'agent'))}"
        f" LEFT OUTER JOIN {q(AgentPermissions._meta.db_table)} p"
        f" ON p.{q(_column(AgentPermissions, 'agent'))} = a.{q(_column(Agent, 'id'))}"
        f" WHERE t.{q(_column(AgentToken, 'digest'))} = %s LIMIT 1"
    )
    statement = _statements[vendor] = _Statement(sql, shape)
    return statement


def find_agent_token(digest: str, using: str = "default") -> FoundToken | None:
    """The token with ``digest`` (live or not: its life is judged by trust_app.tokens.life,
    so a refusal can say why), with its agent and the agent's permissions (cached on it,
    None when it has none); None when no token has that digest."""
    statement = _statement(using)
    with connections[using].cursor() as cursor:
        cursor.execute(statement.sql, [digest])
        row = cursor.fetchone()
    if row is None:
        return None
    token, agent, permissions = statement.shape.instances(row)
    if permissions is not None:
        AgentPermissions._meta.get_field("agent").set_cached_value(permissions, agent)
    Agent.permissions.related.set_cached_value(agent, permissions)
    return FoundToken(token=token, agent=agent)
