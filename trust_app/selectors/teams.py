"""Reads about teams, and the team scope applied to the rows that belong to an agent.

Every list and lookup of something that belongs to an agent (the agent itself, its
approval requests, its audit events) goes through ``person_scope`` and ``team_q``, so
a person sees and changes only what their teams hold (``common.team_scope``).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet

from common.roles import Role, org_roles_of, team_roles_of
from common.team_scope import EDIT_AGENTS, NOWHERE, TeamScope, team_scope
from trust_app.models import DEFAULT_TEAM_ID, Agent, Team, TeamMembership


def person_scope(person: Any, needs: frozenset[Role]) -> TeamScope:
    """The teams whose objects ``person`` reaches with one of the roles ``needs``."""
    if person is None or not getattr(person, "is_authenticated", False):
        return NOWHERE
    return team_scope(org_roles=org_roles_of(person), team_roles=team_roles_of(person), needs=needs)


def team_q(scope: TeamScope, field: str = "team_id") -> Q:
    """A filter keeping the rows whose team (``field``) the scope admits."""
    if scope.everywhere:
        return Q()
    return Q(**{f"{field}__in": sorted(scope.teams)})


def agents_in(scope: TeamScope) -> QuerySet[Agent]:
    return Agent.objects.filter(team_q(scope))


def agent_ids_in(scope: TeamScope) -> frozenset[uuid.UUID] | None:
    """The ids of the agents the scope admits; None for every agent."""
    if scope.everywhere:
        return None
    return frozenset(agents_in(scope).values_list("id", flat=True))


def agent_team_id(agent_id: Any) -> uuid.UUID | None:
    """The team of agent ``agent_id`` (None when there is no such agent)."""
    try:
        return Agent.objects.filter(id=agent_id).values_list("team_id", flat=True).first()
    except (ValueError, TypeError):
        return None


def team_list() -> QuerySet[Team]:
    return Team.objects.order_by("name")


def team_by_name(name: str) -> Team | None:
    return Team.objects.filter(name=name).first()


def team_default() -> Team:
    """The team agents join unless told otherwise (made when a flush removed it)."""
    return Team.objects.get_or_create(id=DEFAULT_TEAM_ID, defaults={"name": "default"})[0]


def team_memberships(person: Any) -> list[tuple[str, str]]:
    """``person``'s (team name, role) pairs, by team."""
    rows = TeamMembership.objects.filter(person=person).order_by("team__name", "role")
    return [(str(name), str(role)) for name, role in rows.values_list("team__name", "role")]


def people_reaching(team_id: Any, needs: frozenset[Role]) -> QuerySet[Any]:
    """Active people who hold one of ``needs`` in team ``team_id`` or organisation-wide."""
    groups = [role.group for role in needs]
    roles = [role.value for role in needs]
    in_team = Q(team_memberships__team_id=team_id, team_memberships__role__in=roles)
    return (
        get_user_model()
        .objects.filter(is_active=True)
        .filter(Q(groups__name__in=groups) | in_team)
        .distinct()
    )


def agent_in_scope(agent_id: Any, scope: TeamScope) -> Agent | None:
    """Agent ``agent_id`` when ``scope`` admits its team, else None."""
    try:
        rows = Agent.objects.select_related("owner", "team").filter(team_q(scope))
        return rows.filter(id=agent_id).first()
    except (ValueError, TypeError):
        return None


def agent_edit_refusal(person: Any, agent: Agent) -> str:
    """Why ``person`` may not change ``agent`` ("" when they may): admins edit only the
    agents of their teams."""
    if person_scope(person, EDIT_AGENTS).admits(agent.team_id):
        return ""
    team = agent.team.name if agent.team_id else "no team"
    return (
        f"agent {agent.name} belongs to team {team}; you edit only the agents of teams "
        "where you hold the admin role"
    )
