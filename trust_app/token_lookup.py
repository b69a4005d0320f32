"""The agent-token lookup of every agent call, as one SQL statement built once.

Compiling the ORM query (the token, its agent and the agent's permissions)
cost more than running it, on every call. The statement is built from the
models' metadata the first time it is needed on a connection's backend, and its
rows go through the same database converters the ORM would apply, so the
instances are what ``select_related`` would have made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connections
from django.db.models import Field, Model

from trust_app.models import Agent, AgentPermissions, AgentToken

# A database converter and the column expression it is called with.
Converter = tuple[Callable[[Any, Any, Any], Any], Any]


@dataclass(frozen=True)
class FoundToken:
    token_id: Any
    last_used_at: datetime | None
    agent: Agent


@dataclass(frozen=True)
class _Statement:
    sql: str
    token_converters: tuple[tuple[Converter, ...], ...]
    agent_converters: tuple[tuple[Converter, ...], ...]
    permission_converters: tuple[tuple[Converter, ...], ...]


_statements: dict[str, _Statement] = {}


def _converters(connection: Any, field: Field[Any, Any], alias: str) -> tuple[Converter, ...]:
    """What the ORM's compiler applies to this column's values, in its order."""
    column = field.get_col(alias)
    chain = (*connection.ops.get_db_converters(column), *column.get_db_converters(connection))
    return tuple((convert, column) for convert in chain)


def _statement(alias: str) -> _Statement:
    connection = connections[alias]
    found = _statements.get(connection.vendor)
    if found is not None:
        return found

    def quote(name: object) -> str:
        return str(connection.ops.quote_name(str(name)))

    def token_column(name: str) -> object:
        return getattr(AgentToken._meta.get_field(name), "column", name)

    token_fields = (AgentToken._meta.get_field("id"), AgentToken._meta.get_field("last_used_at"))
    agent_fields = Agent._meta.concrete_fields
    permission_fields = AgentPermissions._meta.concrete_fields
    selected = [
        *(f"t.{quote(f.column)}" for f in token_fields),
        *(f"a.{quote(f.column)}" for f in agent_fields),
        *(f"p.{quote(f.column)}" for f in permission_fields),
    ]
    token_agent = quote(AgentToken._meta.get_field("agent").column)
    permissions_agent = quote(AgentPermissions._meta.get_field("agent").column)
    agent_pk = quote(Agent._meta.get_field("id").column)
    # Only names from the models' metadata, quoted by the backend; the digest is a parameter.
    sql = (
        f"SELECT {', '.join(selected)} FROM {quote(AgentToken._meta.db_table)} t"  # noqa: S608
        f" INNER JOIN {quote(Agent._meta.db_table)} a ON a.{agent_pk} = t.{token_agent}"
        f" LEFT OUTER JOIN {quote(AgentPermissions._meta.db_table)} p"
        f" ON p.{permissions_agent} = a.{agent_pk}"
        f" WHERE t.{quote(token_column('digest'))} = %s"
        f" AND t.{quote(token_column('revoked_at'))} IS NULL"
        f" AND a.{quote(Agent._meta.get_field('active').column)} LIMIT 1"
    )
    statement = _Statement(
        sql=sql,
        token_converters=tuple(_converters(connection, f, "t") for f in token_fields),
        agent_converters=tuple(_converters(connection, f, "a") for f in agent_fields),
        permission_converters=tuple(_converters(connection, f, "p") for f in permission_fields),
    )
    _statements[connection.vendor] = statement
    return statement


def _convert(
    connection: Any, values: Sequence[Any], converters: Sequence[tuple[Converter, ...]]
) -> list[Any]:
    out = []
    for value, chain in zip(values, converters, strict=True):
        for convert, column in chain:
            value = convert(value, column, connection)
        out.append(value)
    return out


def _instance(model: type[Model], alias: str, values: list[Any]) -> Any:
    names = [f.attname for f in model._meta.concrete_fields]
    return model.from_db(alias, names, values)


def find_agent_token(digest: str, alias: str = "default") -> FoundToken | None:
    """The live token with ``digest`` whose agent is active, with the agent and its
    permissions (cached on it, None when it has none); None when there is no such token."""
    statement = _statement(alias)
    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, [digest])
        row = cursor.fetchone()
    if row is None:
        return None
    tokens = len(statement.token_converters)
    agents = len(statement.agent_converters)
    token_id, last_used_at = _convert(connection, row[:tokens], statement.token_converters)
    agent_values = _convert(connection, row[tokens : tokens + agents], statement.agent_converters)
    agent = _instance(Agent, alias, agent_values)
    permission_values = row[tokens + agents :]
    permissions = None
    if permission_values[0] is not None:
        permissions = _instance(
            AgentPermissions,
            alias,
            _convert(connection, permission_values, statement.permission_converters),
        )
        AgentPermissions._meta.get_field("agent").set_cached_value(permissions, agent)
    Agent.permissions.related.set_cached_value(agent, permissions)
    return FoundToken(token_id=token_id, last_used_at=last_used_at, agent=agent)
