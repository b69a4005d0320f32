"""Writers of teams, of people's roles in them, and of the team an agent belongs to.
Each runs in one transaction with its audit row."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

from django.db import transaction

from audit_app.record import Actor, audit_record
from common.errors import ConflictError, InvalidArgumentError, NotFoundError
from common.roles import ROLE_NAMES, Role, forget_roles
from trust_app.models import Agent, Team, TeamMembership

TEAM_NAME: Final = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")
TEAM_NAME_RULE: Final = (
    "lower-case letters, digits, '-' and '_', 1 to 100, starting with a letter or digit"
)


def team_name_problem(name: str) -> str:
    """Why ``name`` cannot name a team ("" when it can)."""
    return "" if TEAM_NAME.match(name) else f"team name {name!r}: {TEAM_NAME_RULE}"


def _team(name: str) -> Team:
    team = Team.objects.filter(name=name).first()
    if team is None:
        raise NotFoundError(f"no team named {name!r}: create it first")
    return team


@transaction.atomic
def team_create(*, name: str, actor: Actor | None = None) -> Team:
    """A new team named ``name``."""
    problem = team_name_problem(name)
    if problem:
        raise InvalidArgumentError(problem)
    if Team.objects.filter(name=name).exists():
        raise ConflictError(f"a team named {name!r} already exists")
    team = Team.objects.create(name=name)
    audit_record(
        kind="team.created", actor=actor or Actor.system(), outcome="created", data={"team": name}
    )
    return team


@transaction.atomic
def team_ensure(*, name: str, actor: Actor | None = None) -> Team:
    """The team named ``name``, created when missing."""
    found = Team.objects.filter(name=name).first()
    return found if found is not None else team_create(name=name, actor=actor)


def _role(role: str) -> Role:
    if role not in ROLE_NAMES:
        raise InvalidArgumentError(f"role {role!r} is not one of: {', '.join(ROLE_NAMES)}")
    return Role(role)


@transaction.atomic
def team_membership_add(*, person: Any, team: str, role: str, actor: Actor | None = None) -> bool:
    """Give ``person`` ``role`` in ``team``; False when they held it already."""
    held = _role(role)
    found = _team(team)
    _, created = TeamMembership.objects.get_or_create(person=person, team=found, role=held.value)
    if created:
        audit_record(
            kind="person.team_role_added",
            actor=actor or Actor.system(),
            outcome="added",
            data={"username": person.get_username(), "team": found.name, "role": held.value},
        )
    forget_roles(person)
    return created


@transaction.atomic
def team_membership_remove(
    *, person: Any, team: str, role: str, actor: Actor | None = None
) -> bool:
    """Take ``role`` in ``team`` from ``person``; False when they did not hold it."""
    held = _role(role)
    found = _team(team)
    removed, _ = TeamMembership.objects.filter(person=person, team=found, role=held.value).delete()
    if removed:
        audit_record(
            kind="person.team_role_removed",
            actor=actor or Actor.system(),
            outcome="removed",
            data={"username": person.get_username(), "team": found.name, "role": held.value},
        )
    forget_roles(person)
    return bool(removed)


@transaction.atomic
def team_memberships_sync(
    *, person: Any, grants: Iterable[tuple[str, Role]], actor: Actor, source: str
) -> bool:
    """Set ``person``'s team roles to exactly ``grants`` (team name, role), creating the
    teams named; True when something changed (audited with both sides)."""
    wanted = {(team, role.value) for team, role in grants}
    rows = TeamMembership.objects.filter(person=person).select_related("team")
    before = {(m.team.name, m.role) for m in rows}
    if before == wanted:
        return False
    TeamMembership.objects.filter(person=person).delete()
    for team, role in sorted(wanted):
        found = team_ensure(name=team, actor=actor)
        TeamMembership.objects.create(person=person, team=found, role=role)
    audit_record(
        kind="person.team_roles_changed",
        actor=actor,
        outcome="changed",
        data={
            "username": person.get_username(),
            "from": [f"{role}@{team}" for team, role in sorted(before)],
            "to": [f"{role}@{team}" for team, role in sorted(wanted)],
            "source": source,
        },
    )
    forget_roles(person)
    return True


@transaction.atomic
def agent_team_set(*, agent: Agent, team: str, actor: Actor | None = None) -> bool:
    """Move ``agent`` to ``team``; False when it is there already."""
    found = _team(team)
    locked = Agent.objects.select_for_update().select_related("team").get(pk=agent.pk)
    if locked.team_id == found.id:
        return False
    before = locked.team.name
    Agent.objects.filter(pk=agent.pk).update(team=found)
    agent.team = found
    audit_record(
        kind="agent.team_changed",
        actor=actor or Actor.system(),
        agent=agent,
        outcome="changed",
        data={"from": before, "to": found.name},
    )
    return True
