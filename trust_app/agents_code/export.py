"""The agents file as the database has it now."""

from __future__ import annotations

from secrets_app.models import SecretGrant
from trust_app.agents_code.schema import AgentEntry, AgentsFile, SecretGrantEntry
from trust_app.models import Agent
from trust_app.services.permissions import agent_permissions_state


def agents_export() -> AgentsFile:
    """Every agent with its level, autonomy, owner, team, workspace, lists, sub-constraints,
    cap on calls at once and secret grants (names only: a secret's value never leaves
    the broker)."""
    grants: dict[object, list[SecretGrantEntry]] = {}
    rows = SecretGrant.objects.filter(secret__revoked_at__isnull=True).values_list(
        "agent_id", "secret__name", "tool", "server", "hosts", "inject"
    )
    for agent_id, name, tool, server, hosts, inject in rows:
        grants.setdefault(agent_id, []).append(
            SecretGrantEntry(
                secret=name, tool=tool, server=server, hosts=tuple(hosts or ()), inject=inject
            )
        )
    entries = []
    for agent in Agent.objects.select_related("owner", "team", "permissions").order_by("name"):
        state = agent_permissions_state(agent)
        entries.append(
            AgentEntry(
                name=agent.name,
                access_level=state.access_level,
                autonomy=state.autonomy,  # type: ignore[arg-type]
                owner=agent.owner.get_username() if agent.owner else None,
                team=agent.team.name,
                workspace=agent.workspace,
                active=agent.active,
                allowed_tools=tuple(state.allowed),
                denied_tools=tuple(state.denied),
                sub_constraints=dict(state.sub_constraints),
                max_concurrent_calls=state.max_concurrent_calls,
                secret_grants=tuple(sorted(grants.get(agent.id, []), key=lambda g: g.key())),
            )
        )
    return AgentsFile(agents=tuple(entries))
