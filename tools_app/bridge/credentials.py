"""A stdio MCP server's ``secrets``: the broker's values for one call, and their redaction.

Each call asks the broker (``secrets_for_server``) for the server's ``{ENV: secret
name}``: a server shared by every agent needs a grant without an agent, a server run per
agent (``state: agent``, or the agent's workspace) that agent's grant. Every use is
audited by the broker with the call's invocation. A name not granted, revoked or
unknown refuses the call with words that do not confirm the name exists, and nothing is
started; a secret the keys cannot read refuses it too. The values reach only the
server's environment (``launch``), and the call's result and errors are redacted of
them in every spelling the known-secret redaction covers, so a tool that echoes its
environment shows the agent a marker.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from common.config.mcp import McpServer
from tools_app.builtin.base import RefusalCode, ToolOutcome, ToolRefusedError
from tools_app.sanitize.known import known_secrets_for
from tools_app.sanitize.redaction import redact_counted
from tools_app.sanitize.structure import sanitize_structure


def server_secret_values(
    server: McpServer, *, agent_id: str | None, invocation_id: str | None, tool: str
) -> dict[str, str]:
    """``{ENV: value}`` for ``server`` (``agent_id`` None: the shared server), or a refusal."""
    if not server.secrets:
        return {}
    from secrets_app.broker import (
        SecretNotGrantedError,
        SecretUnavailableError,
        secrets_for_server,
    )
    from trust_app.models import Agent

    agent = Agent.objects.filter(pk=agent_id).first() if agent_id else None
    if agent_id is not None and agent is None:
        raise ToolRefusedError(RefusalCode.LIMIT_EXCEEDED, f"{tool} is unavailable: no such agent")
    try:
        return secrets_for_server(
            agent=agent,
            server=server.name,
            credentials=server.secrets,
            invocation_id=uuid.UUID(invocation_id) if invocation_id else None,
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

    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = tuple(v for v in values.values() if v)
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
