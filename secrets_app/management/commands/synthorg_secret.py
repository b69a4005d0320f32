"""manage.py synthorg_secret set NAME | list | revoke NAME | grant | ungrant | rotate-keys.

A value is read from standard input and never printed, not even in an error.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.record import Actor
from common.errors import SynthOrgError
from secrets_app.keyring import SecretValueUnreadableError
from secrets_app.selectors import secret_list
from secrets_app.services import (
    secret_grant,
    secret_revoke,
    secret_set,
    secret_ungrant,
    secrets_rotate_keys,
)
from trust_app.models import Agent

_ACTOR = Actor.system("manage.py synthorg_secret")


def _one_line(raw: str) -> str:
    """Standard input without the line end a shell or `echo` adds."""
    if raw.endswith("\r\n"):
        return raw[:-2]
    return raw[:-1] if raw.endswith("\n") else raw


class Command(BaseCommand):
    help = "Manage named secrets: values are read from standard input and never printed."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        setter = sub.add_parser("set", help="store a new version of NAME read from stdin")
        setter.add_argument("name")
        sub.add_parser("list", help="names, versions, grants and last use (never values)")
        revoke = sub.add_parser("revoke", help="erase NAME's values and remove its grants")
        revoke.add_argument("name")
        for verb in ("grant", "ungrant"):
            grant = sub.add_parser(verb, help=f"{verb} NAME to an agent for a tool or a server")
            grant.add_argument("name")
            grant.add_argument(
                "--agent",
                default=None,
                help="the agent's name (leave out for an upstream server shared by every agent)",
            )
            use = grant.add_mutually_exclusive_group(required=True)
            use.add_argument("--tool", default="", help="a tool that takes secrets")
            use.add_argument("--server", default="", help="an upstream MCP server's name")
            if verb == "grant":
                grant.add_argument(
                    "--host",
                    action="append",
                    default=[],
                    metavar="HOST[:PORT]",
                    help="seal the value: the console adds it only to requests to this host "
                    "(or *.DOMAIN); repeatable; required for shell_command and code_runner",
                )
                grant.add_argument(
                    "--inject",
                    default="",
                    metavar="HOW",
                    help="where the sealed value goes: bearer (default), basic, basic:<user>, "
                    "header:<Name> or query:<param>",
                )
        rotate = sub.add_parser("rotate-keys", help="re-encrypt every value under the newest key")
        rotate.add_argument(
            "--new-key",
            action="store_true",
            help="make a new key first (key file in var/ only), then drop the old ones",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        try:
            if action == "set":
                self._set(options["name"])
            elif action == "list":
                self._list()
            elif action == "revoke":
                secret_revoke(name=options["name"], actor=_ACTOR)
                self.stdout.write(f"revoked {options['name']}")
            elif action in ("grant", "ungrant"):
                self._grant(action, options)
            else:
                done = secrets_rotate_keys(actor=_ACTOR, new_key=options["new_key"])
                self.stdout.write(
                    f"re-encrypted {done['values']} value(s) under key {done['key_id']}"
                )
        except SynthOrgError as exc:
            raise CommandError(exc.message) from exc
        except SecretValueUnreadableError as exc:
            raise CommandError(f"{exc}: nothing was changed") from exc

    def _set(self, name: str) -> None:
        if sys.stdin.isatty():
            self.stderr.write(f"value of {name} (one line, not echoed back):")
        version = secret_set(name=name, value=_one_line(sys.stdin.read()), actor=_ACTOR)
        self.stdout.write(f"stored {name} version {version.number}")

    def _list(self) -> None:
        rows = secret_list()
        if not rows:
            self.stdout.write("no secrets")
        for row in rows:
            state = "active" if row.active else "revoked"
            used = row.last_used_at.isoformat(timespec="seconds") if row.last_used_at else "never"
            grants = ", ".join(f"{g.holder}:{g.use}" for g in row.grants) or "no grants"
            self.stdout.write(
                f"{row.name}\tversion {row.version}\t{state}\tlast used {used}\t{grants}"
            )

    def _grant(self, action: str, options: dict[str, Any]) -> None:
        agent = None
        if options["agent"] is not None:
            agent = Agent.objects.filter(name=options["agent"]).first()
            if agent is None:
                raise CommandError(f"no agent named {options['agent']!r}")
        use = {"tool": options["tool"], "server": options["server"]}
        holder = agent.name if agent is not None else "every agent"
        if action == "grant":
            grant = secret_grant(
                name=options["name"], agent=agent, actor=_ACTOR,
                hosts=options["host"], inject=options["inject"], **use,
            )  # fmt: skip
            self.stdout.write(f"granted {options['name']} to {holder} for {grant.use}")
            return
        secret_ungrant(name=options["name"], agent=agent, actor=_ACTOR, **use)
        self.stdout.write(f"ungranted {options['name']} to {holder}")
