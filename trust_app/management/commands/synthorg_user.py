"""manage.py synthorg_user create NAME --role ROLE [--team TEAM] [--password P] [--token]."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.errors import SynthOrgError
from common.roles import ROLE_NAMES
from trust_app.services.agents import person_create, person_token_issue


class Command(BaseCommand):
    help = "Manage people (operators, admins, auditors)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a person")
        create.add_argument("name")
        create.add_argument("--role", required=True, choices=ROLE_NAMES)
        create.add_argument(
            "--team", default=None, help="hold the role in this team only (else organisation-wide)"
        )
        create.add_argument("--password", default=None)
        create.add_argument(
            "--token", action="store_true", help="print a personal API token once (last line)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            person = person_create(
                username=options["name"],
                role=options["role"],
                password=options["password"],
                team=options["team"],
            )
            where = f" of team {options['team']}" if options["team"] else ""
            self.stdout.write(f"created {options['role']}{where} {person.get_username()}")
            if options["token"]:
                token = person_token_issue(person=person, label="command line")
                self.stdout.write("personal token (shown once):")
                self.stdout.write(token)
        except SynthOrgError as exc:
            raise CommandError(exc.message) from exc
