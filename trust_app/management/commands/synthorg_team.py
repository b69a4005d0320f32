"""manage.py synthorg_team create NAME | list | add PERSON --team T --role R |
remove PERSON --team T --role R | move AGENT --team T."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.record import Actor
from common.errors import SynthOrgError
from common.roles import ROLE_NAMES
from trust_app.models import Agent, TeamMembership
from trust_app.selectors.teams import team_list
from trust_app.services.teams import (
    agent_team_set,
    team_create,
    team_membership_add,
    team_membership_remove,
)

ACTOR = Actor.system("command line")


class Command(BaseCommand):
    help = "Manage teams: their people's roles, and the agents they hold."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a team")
        create.add_argument("name")
        sub.add_parser("list", help="teams, their agents and their people's roles")
        for verb, words in (("add", "give a person a role in a team"), ("remove", "take it")):
            member = sub.add_parser(verb, help=words)
            member.add_argument("person")
            member.add_argument("--team", required=True)
            member.add_argument("--role", required=True, choices=ROLE_NAMES)
        move = sub.add_parser("move", help="move an agent to a team")
        move.add_argument("agent")
        move.add_argument("--team", required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            self._handle(options)
        except SynthOrgError as exc:
            raise CommandError(exc.message) from exc

    def _handle(self, options: dict[str, Any]) -> None:
        action = options["action"]
        if action == "create":
            team = team_create(name=options["name"], actor=ACTOR)
            self.stdout.write(f"created team {team.name}")
        elif action == "list":
            self._list()
        elif action in ("add", "remove"):
            person = get_user_model().objects.filter(username=options["person"]).first()
            if person is None:
                raise CommandError(f"no person named {options['person']!r}")
            change = team_membership_add if action == "add" else team_membership_remove
            done = change(person=person, team=options["team"], role=options["role"], actor=ACTOR)
            what = f"{options['role']} of {options['team']}"
            if action == "add":
                already = "" if done else " already"
                self.stdout.write(f"{person.get_username()} is{already} {what}")
            else:
                verb = "is no longer" if done else "was not"
                self.stdout.write(f"{person.get_username()} {verb} {what}")
        else:
            agent = Agent.objects.filter(name=options["agent"]).first()
            if agent is None:
                raise CommandError(f"no agent named {options['agent']!r}")
            moved = agent_team_set(agent=agent, team=options["team"], actor=ACTOR)
            where = f"team {options['team']}"
            self.stdout.write(
                f"moved {agent.name} to {where}" if moved else f"{agent.name} is in {where}"
            )

    def _list(self) -> None:
        for team in team_list():
            agents = ", ".join(team.agents.order_by("name").values_list("name", flat=True))
            self.stdout.write(f"{team.name}: agents [{agents}]")
            rows = TeamMembership.objects.filter(team=team).order_by("role", "person__username")
            for username, role in rows.values_list("person__username", "role"):
                self.stdout.write(f"  {role} {username}")
