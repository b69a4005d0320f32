"""invocation_claim: queued → running by compare-and-set, and the claimed call to run.

The worker needs the call with its agent, the agent's permissions and its
approval request as soon as it owns it, and the tools an admin has switched off
since (it does not run a call of one). On PostgreSQL the claim and that read
are one statement (an UPDATE ... RETURNING joined in a CTE), built once from
the models' metadata; elsewhere they are the ORM's UPDATE and SELECT. Either
way the loser of a race gets None and changes nothing, and the status message
goes out once the claim has committed.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from common.db_rows import RowShape
from tools_app.events import publish_invocation_status
from tools_app.models import Invocation, InvocationStatus, ToolDefinition
from tools_app.selectors.invocations import disabled_tool_keys
from tools_app.services.invocation_state import invocation_transition
from trust_app.models import Agent, AgentPermissions
from trust_app.policy import name_key

RELATED = ("agent__permissions", "approval")
# Where a claimed call keeps the tools switched off when it was claimed.
_DISABLED_AT_CLAIM = "_synthorg_disabled_tools"


@functools.cache
def _approval_model() -> type[Any]:
    """The approval request's model, through the invocation's reverse relation."""
    return Invocation._meta.get_field("approval").related_model


@dataclass(frozen=True)
class _Statement:
    sql: str
    shape: RowShape


_statement: _Statement | None = None


def _column(model: type[Any], name: str) -> str:
    return str(getattr(model._meta.get_field(name), "column", name))


def _claim_statement() -> _Statement:
    global _statement
    if _statement is not None:
        return _statement
    ApprovalRequest = _approval_model()
    shape = RowShape(
        [(Invocation, "c"), (Agent, "a"), (AgentPermissions, "p"), (ApprovalRequest, "r")]
    )
    q = shape.quote

    def col(name: str) -> str:
        return q(_column(Invocation, name))

    tools = q(ToolDefinition._meta.db_table)
    tool_name = q(_column(ToolDefinition, "name"))
    disabled = (
        f"(SELECT COALESCE(array_agg({tool_name}), '{{}}') FROM {tools}"  # noqa: S608
        f" WHERE NOT {q(_column(ToolDefinition, 'enabled'))})"
    )
    sql = (
        f"WITH c AS (UPDATE {q(Invocation._meta.db_table)}"  # noqa: S608
        f" SET {col('status')} = %s, {col('started_at')} = %s, {col('worker')} = %s,"
        f" {col('attempts')} = {col('attempts')} + 1, {col('updated_at')} = %s"
        f" WHERE {col('id')} = %s AND {col('status')} = %s AND NOT {col('held')} RETURNING *)"
        f" SELECT {shape.select_list()}, {disabled} FROM c"
        f" INNER JOIN {q(Agent._meta.db_table)} a"
        f" ON a.{q(_column(Agent, 'id'))} = c.{col('agent')}"
        f" LEFT OUTER JOIN {q(AgentPermissions._meta.db_table)} p"
        f" ON p.{q(_column(AgentPermissions, 'agent'))} = a.{q(_column(Agent, 'id'))}"
        f" LEFT OUTER JOIN {q(ApprovalRequest._meta.db_table)} r"
        f" ON r.{q(_column(ApprovalRequest, 'invocation'))} = c.{col('id')}"
    )
    _statement = _Statement(sql, shape)
    return _statement


def invocation_claim(*, invocation_id: uuid.UUID, worker: str) -> Invocation | None:
    """Take a queued call for ``worker``: the call (agent, permissions and approval
    loaded), or None when it is not queued (taken, cancelled, finished)."""
    now = timezone.now()
    if connection.vendor != "postgresql":
        claimed = invocation_transition(
            invocation_id=invocation_id,
            from_statuses=[InvocationStatus.QUEUED],
            to_status=InvocationStatus.RUNNING,
            # A call waiting its turn is not this message's to run (a stale or re-sent one).
            where={"held": False},
            started_at=now,
            worker=worker,
            attempts=F("attempts") + 1,
        )
        if not claimed:
            return None
        loaded = Invocation.objects.select_related(*RELATED).get(id=invocation_id)
        setattr(loaded, _DISABLED_AT_CLAIM, disabled_tool_keys())
        return loaded
    statement = _claim_statement()
    running, queued = str(InvocationStatus.RUNNING.value), str(InvocationStatus.QUEUED.value)
    params: list[Any] = [running, now, worker, now, invocation_id, queued]
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    invocation, agent, permissions, approval = statement.shape.instances(row)
    _link(invocation, agent, permissions, approval)
    setattr(invocation, _DISABLED_AT_CLAIM, frozenset(name_key(name) for name in row[-1]))
    transaction.on_commit(
        lambda: publish_invocation_status(invocation_id, InvocationStatus.RUNNING)
    )
    return invocation


def disabled_at_claim(invocation: Invocation) -> frozenset[str]:
    """The tools (their keys) switched off when this call was claimed; read now for a
    call that was not claimed here."""
    known: frozenset[str] | None = getattr(invocation, _DISABLED_AT_CLAIM, None)
    return disabled_tool_keys() if known is None else known


def _link(invocation: Any, agent: Any, permissions: Any, approval: Any) -> None:
    """The relation caches ``select_related`` would have filled."""
    Invocation._meta.get_field("agent").set_cached_value(invocation, agent)
    Agent.permissions.related.set_cached_value(agent, permissions)
    if permissions is not None:
        AgentPermissions._meta.get_field("agent").set_cached_value(permissions, agent)
    Invocation.approval.related.set_cached_value(invocation, approval)
    if approval is not None:
        _approval_model()._meta.get_field("invocation").set_cached_value(approval, invocation)
