"""manage.py synthorg_agent: create agents and manage their tokens.

``create NAME --level LEVEL [--max-concurrent-calls N] [...]`` and ``token issue|rotate``
print the new token once, alone on the last line; ``token list NAME`` shows each token's
life; ``token revoke TOKEN_ID`` refuses a token from now on.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from audit_app.record import Actor
from common.errors import SynthOrgError
from trust_app.models import AccessLevel, Agent, AgentToken, Autonomy
from trust_app.services.agents import agent_create
from trust_app.services.tokens import (
    IssuedAgentToken,
    agent_token_issue,
    agent_token_revoke,
    agent_token_rotate,
)
from trust_app.tokens.life import SCOPE_VALUES

ACTOR = Actor.system("synthorg_agent command")


class Command(BaseCommand):
    help = "Manage agents and their tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create an agent and print its token once")
        create.add_argument("name")
        create.add_argument("--level", required=True, choices=AccessLevel.values)
        create.add_argument("--autonomy", default=Autonomy.SEMI, choices=Autonomy.values)
        create.add_argument("--workspace", default=None)
        create.add_argument("--owner", default=None, help="username of the owning person")
        create.add_argument(
            "--max-concurrent-calls",
            type=int,
            default=None,
            metavar="N",
            help="how many of its calls run at once, 1 to 10000 (default: the console's "
            "SYNTHORG_AGENT_MAX_CONCURRENT_CALLS); calls beyond wait their turn, queued",
        )

        token = sub.add_parser("token", help="issue, rotate, revoke or list an agent's tokens")
        verbs = token.add_subparsers(dest="verb", required=True)
        issue = verbs.add_parser("issue", help="issue a token for AGENT and print it once")
        issue.add_argument("agent")
        issue.add_argument("--label", default="")
        issue.add_argument(
            "--scopes",
            default=None,
            help=f"comma-separated, of: {', '.join(SCOPE_VALUES)} (default: agent_api,mcp)",
        )
        life = issue.add_mutually_exclusive_group()
        life.add_argument("--expires-in-days", type=int, default=None)
        life.add_argument("--never-expires", action="store_true")
        rotate = verbs.add_parser(
            "rotate", help="replace TOKEN_ID; the old token stays valid for the overlap"
        )
        rotate.add_argument("token_id", help="the token's public id (token list shows it)")
        rotate.add_argument("--overlap", type=int, default=None, help="seconds")
        revoke = verbs.add_parser("revoke", help="refuse TOKEN_ID from now on")
        revoke.add_argument("token_id")
        listing = verbs.add_parser("list", help="AGENT's tokens and their life")
        listing.add_argument("agent")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "create":
                self._create(options)
            else:
                getattr(self, f"_token_{options['verb']}")(options)
        except SynthOrgError as exc:
            raise CommandError(exc.message) from exc

    def _create(self, options: dict[str, Any]) -> None:
        owner = None
        if options["owner"]:
            owner = get_user_model().objects.filter(username=options["owner"]).first()
            if owner is None:
                raise CommandError(f"no person named {options['owner']!r}")
        created = agent_create(
            name=options["name"],
            access_level=options["level"],
            autonomy=options["autonomy"],
            workspace=options["workspace"],
            owner=owner,
            max_concurrent_calls=options["max_concurrent_calls"],
        )
        agent = created.agent
        cap = agent.max_concurrent_calls or "default"
        self.stdout.write(
            f"created agent {agent.name} ({agent.access_level}, {agent.autonomy}, "
            f"calls at once: {cap}) workspace {agent.workspace}"
        )
        self.stdout.write("token (shown once):")
        self.stdout.write(created.token)

    @staticmethod
    def _agent(name: str) -> Agent:
        agent = Agent.objects.filter(name=name).first()
        if agent is None:
            raise CommandError(f"no agent named {name!r}")
        return agent

    @staticmethod
    def _token(public_id: str) -> AgentToken:
        token = AgentToken.objects.select_related("agent").filter(public_id=public_id).first()
        if token is None:
            raise CommandError(f"no agent token with id {public_id!r} (token list AGENT shows ids)")
        return token

    def _shown_once(self, issued: IssuedAgentToken) -> None:
        token = issued.token
        expires = token.expires_at.isoformat() if token.expires_at else "never"
        self.stdout.write(
            f"token {token.public_id} for {token.agent.name}: scopes {','.join(token.scopes)}, "
            f"expires {expires}"
        )
        self.stdout.write("token (shown once):")
        self.stdout.write(issued.plaintext)

    def _token_issue(self, options: dict[str, Any]) -> None:
        days = options["expires_in_days"]
        if days is not None and days <= 0:
            raise CommandError("--expires-in-days must be at least 1 (or use --never-expires)")
        scopes = options["scopes"].split(",") if options["scopes"] is not None else None
        issued = agent_token_issue(
            agent=self._agent(options["agent"]),
            actor=ACTOR,
            label=options["label"],
            scopes=scopes,
            expires_at=timezone.now() + timedelta(days=days) if days else None,
            never_expires=options["never_expires"],
        )
        self._shown_once(issued)

    def _token_rotate(self, options: dict[str, Any]) -> None:
        old = self._token(options["token_id"])
        issued = agent_token_rotate(token=old, actor=ACTOR, overlap_seconds=options["overlap"])
        old.refresh_from_db()
        until = old.expires_at.isoformat() if old.expires_at else "never"
        self.stdout.write(f"token {old.public_id} stays valid until {until}")
        self._shown_once(issued)

    def _token_revoke(self, options: dict[str, Any]) -> None:
        token = self._token(options["token_id"])
        if agent_token_revoke(token=token, actor=ACTOR):
            self.stdout.write(f"token {token.public_id} revoked")
        else:
            self.stdout.write(f"token {token.public_id} was already revoked")

    def _token_list(self, options: dict[str, Any]) -> None:
        agent = self._agent(options["agent"])
        self.stdout.write("id        scopes                  expires                    last used")
        for token in AgentToken.objects.filter(agent=agent).order_by("-created_at"):
            expires = (
                token.expires_at.isoformat(timespec="seconds") if token.expires_at else "never"
            )
            used = (
                f"{token.last_used_at.isoformat(timespec='seconds')} from "
                f"{token.last_used_address or '?'}"
                if token.last_used_at
                else "never"
            )
            self.stdout.write(
                f"{token.public_id}  {','.join(token.scopes):22}  {expires:25}  {used}  "
                f"[{token.state}] {token.label}"
            )
