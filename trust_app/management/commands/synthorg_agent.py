"""manage.py synthorg_agent create NAME --level LEVEL [...]: prints the token once, last."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.errors import SynthOrgError
from trust_app.models import AccessLevel, Autonomy
from trust_app.services import agent_create


class Command(BaseCommand):
    help = "Manage agents."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create an agent and print its token once")
        create.add_argument("name")
        create.add_argument("--level", required=True, choices=AccessLevel.values)
        create.add_argument("--autonomy", default=Autonomy.SEMI, choices=Autonomy.values)
        create.add_argument("--workspace", default=None)
        create.add_argument("--owner", default=None, help="username of the owning person")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = None
        if options["owner"]:
            owner = get_user_model().objects.filter(username=options["owner"]).first()
            if owner is None:
                raise CommandError(f"no person named {options['owner']!r}")
        try:
            created = agent_create(
                name=options["name"],
                access_level=options["level"],
                autonomy=options["autonomy"],
                workspace=options["workspace"],
                owner=owner,
            )
        except SynthOrgError as exc:
            raise CommandError(exc.message) from exc
        agent = created.agent
        self.stdout.write(
            f"created agent {agent.name} ({agent.access_level}, {agent.autonomy}) "
            f"workspace {agent.workspace}"
        )
        self.stdout.write("token (shown once):")
        self.stdout.write(created.token)
