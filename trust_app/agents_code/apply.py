"""Apply an agents file: the plan's changes in one transaction, an audit row for each."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import transaction

from audit_app.record import Actor, audit_record
from secrets_app.services import secret_grant, secret_ungrant
from trust_app.agents_code.plan import Change, Plan, agents_plan
from trust_app.agents_code.schema import AgentsFile
from trust_app.models import Agent
from trust_app.services.agents import agent_create
from trust_app.services.permissions import agent_permissions_update
from trust_app.services.teams import agent_team_set
from trust_app.signals import agent_switched_off


@dataclass(frozen=True)
class Applied:
    plan: Plan
    # The first token of each agent the file created, shown once.
    new_tokens: dict[str, str] = field(default_factory=dict)


def agent_owner_update(*, agent: Agent, owner: str | None, actor: Actor) -> None:
    """Give the agent another owner (a person's username), or none; audited."""
    person = get_user_model().objects.get(username=owner) if owner else None
    before = agent.owner.get_username() if agent.owner else None
    Agent.objects.filter(pk=agent.pk).update(owner=person)
    audit_record(kind="agent.owner_updated", actor=actor, agent=agent, outcome="updated",
                 data={"before": before, "after": owner})  # fmt: skip


def agent_active_update(*, agent: Agent, active: bool, actor: Actor) -> None:
    """Switch the agent on or off (an inactive agent's tokens are refused); audited."""
    Agent.objects.filter(pk=agent.pk).update(active=active)
    audit_record(kind="agent.activated" if active else "agent.deactivated", actor=actor,
                 agent=agent, outcome="activated" if active else "deactivated")  # fmt: skip
    if not active:
        agent_id = str(agent.pk)
        transaction.on_commit(
            lambda: agent_switched_off.send_robust(sender=Agent, agent_id=agent_id)
        )


def _make(change: Change, actor: Actor, new_tokens: dict[str, str]) -> None:
    entry = change.entry
    if change.action == "create":
        created = agent_create(
            name=entry.name,
            access_level=entry.access_level,
            autonomy=entry.autonomy,
            workspace=entry.workspace,
            actor=actor,
            max_concurrent_calls=entry.max_concurrent_calls,
            team=entry.team,
        )
        new_tokens[entry.name] = created.token
        return
    agent = Agent.objects.select_related("owner").get(name=entry.name)
    if change.action == "permissions":
        agent_permissions_update(
            agent=agent,
            actor=actor,
            access_level=entry.access_level,
            autonomy=entry.autonomy,
            allowed=entry.allowed_tools,
            denied=entry.denied_tools,
            sub_constraints=entry.sub_constraints,
            max_concurrent_calls=entry.max_concurrent_calls,
        )
    elif change.action == "owner":
        agent_owner_update(agent=agent, owner=entry.owner, actor=actor)
    elif change.action == "team" and entry.team is not None:
        agent_team_set(agent=agent, team=entry.team, actor=actor)
    elif change.action == "active":
        agent_active_update(agent=agent, active=entry.active, actor=actor)
    elif change.grant is not None:
        grant = change.grant
        if change.action == "grant_secret":
            secret_grant(
                name=grant.secret, agent=agent, actor=actor, tool=grant.tool,
                server=grant.server, hosts=grant.hosts, inject=grant.inject,
            )  # fmt: skip
        else:
            secret_ungrant(
                name=grant.secret, agent=agent, actor=actor, tool=grant.tool, server=grant.server
            )
    else:  # a plan this module does not know how to make is a bug: refuse it whole
        raise ValueError(f"unknown change {change.action!r}")


@transaction.atomic
def agents_apply(*, agents_file: AgentsFile, source: str, text: str, actor: Actor) -> Applied:
    """Plan ``agents_file`` against the database as it is now and make every change, or
    none (one transaction); each change writes its own audit row, and one more records
    the file applied."""
    # Planned inside the transaction: what is applied is what was judged.
    plan = agents_plan(agents_file, source=source)
    new_tokens: dict[str, str] = {}
    for change in plan.changes:
        _make(change, actor, new_tokens)
    if not plan.empty:
        audit_record(
            kind="agents.applied",
            actor=actor,
            outcome="applied",
            reason=f"{len(plan.changes)} changes from {source}",
            data={
                "source": source,
                "sha256": hashlib.sha256(text.encode()).hexdigest(),
                "changes": [change.line() for change in plan.changes],
            },
        )
    return Applied(plan=plan, new_tokens=new_tokens)
