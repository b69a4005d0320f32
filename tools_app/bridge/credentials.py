"""An MCP server's ``secrets``: the broker's grants for one call, sealed or sent, and their
redaction.

Each call asks the broker for the server's ``{ENV_OR_HEADER: secret name}``: a server
shared by every agent needs a grant without an agent, a server run per agent (``state:
agent``, or the agent's workspace) that agent's grant. Every use is audited by the
broker with the call's invocation. A name not granted, revoked or unknown refuses the
call with words that do not confirm the name exists, and nothing is started; a secret
the keys cannot read refuses it too.

- A **stdio** server is a program that reads what agents send it: it never holds a
  value. Its variable holds the reference (``${secret:NAME}``) as a placeholder, and its
  egress proxy adds the value to its HTTP(S) requests to the hosts the grant names
  (``synthorg_secret grant NAME --server S --host H --inject HOW``); a grant without
  hosts refuses the call until an admin seals it.
- An **http** server is reached by the console itself: the value goes in the header the
  entry names, on the console's own request.
The call's result and errors are redacted of the values in every spelling the
known-secret redaction covers either way.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from common.config.mcp import McpServer
from tools_app.builtin.base import RefusalCode, ToolOutcome, ToolRefusedError
from tools_app.sanitize.known import known_secrets_for
from tools_app.sanitize.redaction import redact_counted
from tools_app.sanitize.structure import sanitize_structure


@dataclass(frozen=True)
class ServerSecrets:
    """What one call gives a server: ``env`` (a stdio server's variables, holding
    placeholders; an http server's headers, holding values), the ``values`` (redacted
    from the result) and, for stdio, the ``sealed`` grants its egress proxy applies."""

    env: dict[str, str] = field(default_factory=dict)
    values: tuple[str, ...] = ()
    sealed: tuple[Any, ...] = ()

    @property
    def digest_source(self) -> dict[str, str]:
        """What a warm server was started with: a rotated value starts it again."""
        return {**self.env, **{f"sealed:{i}": v for i, v in enumerate(self.values)}}


def placeholders(server: McpServer) -> dict[str, str]:
    """A stdio server's variables with no value in them (discovery and health listings)."""
    return {target: f"${{secret:{name}}}" for target, name in server.secrets.items()}


def server_secret_values(
    server: McpServer, *, agent_id: str | None, invocation_id: str | None, tool: str
) -> ServerSecrets:
    """The secrets ``server`` gets for this call (``agent_id`` None: the shared server),
    or a refusal."""
    if not server.secrets:
        return ServerSecrets()
    from secrets_app.broker import (
        SecretNotGrantedError,
        SecretUnavailableError,
        granted_secrets_for_server,
    )
    from trust_app.models import Agent

    agent = Agent.objects.filter(pk=agent_id).first() if agent_id else None
    if agent_id is not None and agent is None:
        raise ToolRefusedError(RefusalCode.LIMIT_EXCEEDED, f"{tool} is unavailable: no such agent")
    try:
        granted = granted_secrets_for_server(
            agent=agent,
            server=server.name,
            credentials=server.secrets,
            invocation_id=uuid.UUID(invocation_id) if invocation_id else None,
        )
        values = tuple(dict.fromkeys(g.value for g in granted.values()))
        if server.transport != "stdio":
            return ServerSecrets(
                env={target: g.value for target, g in granted.items()}, values=values
            )
        unsealed = sorted({g.name for g in granted.values() if not g.hosts})
        if unsealed:
            raise ToolRefusedError(
                RefusalCode.LIMIT_EXCEEDED,
                f"{tool} is unavailable: its MCP server {server.name} runs as a program that "
                f"never holds a secret's value, and {', '.join(unsealed)} is granted to it "
                "without hosts; an admin grants it again with --host HOST (and --inject) so "
                "that its egress proxy adds the value to requests to those hosts. Nothing "
                "was started.",
            )
        return ServerSecrets(
            env=placeholders(server),
            values=values,
            sealed=tuple({g.name: g for g in granted.values()}.values()),
        )
    except SecretNotGrantedError:
        whose = "this agent's" if agent is not None else "every agent's (shared)"
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"{tool} is unavailable: its MCP server {server.name} is configured with a secret "
            f"{whose} server may not use (no such secret, or no grant of it for this server); "
            "an admin grants secrets to the server on the secrets page. Nothing was started "
            "or sent without it.",
        ) from None
    except SecretUnavailableError:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"{tool} is unavailable: a secret its MCP server {server.name} needs cannot be read "
            "now; an admin must check the secrets keys. Nothing was started or sent without it.",
        ) from None


class SecretRedactor:
    """Removes the values of a call's server secrets from what the call returns."""

    def __init__(self, values: Iterable[str]) -> None:
        self.values = tuple(v for v in values if v)
        self._known = (
            known_secrets_for(self.values, settings.SYNTHORG_SECRET_MIN_LENGTH)
            if self.values
            else None
        )

    def text(self, text: str) -> str:
        if self._known is None or not text:
            return text
        return redact_counted(text, self._known, shapes=False)[0]

    def structure(self, value: Any) -> Any:
        # Known values only: the shape stays, so a result still matches its output schema.
        if not self.values or value is None:
            return value
        return sanitize_structure(
            value,
            known_secrets=self.values,
            min_secret_length=settings.SYNTHORG_SECRET_MIN_LENGTH,
            shapes=False,
        ).value

    def outcome(self, outcome: ToolOutcome) -> ToolOutcome:
        if not self.values:
            return outcome
        import dataclasses

        return dataclasses.replace(
            outcome,
            content=self.text(outcome.content),
            structured=self.structure(
                dict(outcome.structured) if outcome.structured is not None else None
            ),
        )
