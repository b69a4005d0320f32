"""The one place a call's `${secret:NAME}` references meet the broker.

- `secret_references_check` at submission: every reference in a slot of the tool,
  every name granted to the agent for that tool; refused otherwise (nothing stored).
- `call_secrets_resolve` in the worker, just before the tool runs: the arguments
  with the values in their slots (never stored), and the values themselves, which
  the worker adds to the known secrets redacted from that call's result.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.vocabulary.network import NetworkTargetError, parse_url
from common.vocabulary.sealing import parse_sealed_hosts
from secrets_app.broker import (
    NOT_GRANTED,
    GrantedSecret,
    SecretNotGrantedError,
    granted_secrets_for_call,
    ungranted_names,
)
from secrets_app.references import (
    ANY_KEY,
    SEALED_TOOLS,
    SECRET_SLOTS,
    checked_references,
    display_path,
    find_references,
    substitute,
)
from trust_app.models import Agent


@dataclass(frozen=True)
class CallSecrets:
    """What a tool runs with: `arguments` with values substituted (or, for a sealed
    tool, the references left as placeholders), the `values` (redacted from its
    result) and the `sealed` secrets the egress proxy adds on the way out."""

    arguments: dict[str, Any]
    values: tuple[str, ...]
    sealed: tuple[GrantedSecret, ...] = ()


def secret_names(arguments: Mapping[str, Any]) -> list[str]:
    """The names a call refers to, once each, in order (for cards and audit)."""
    return list(dict.fromkeys(r.name for r in find_references(arguments)))


def secret_references_check(*, agent: Agent, tool: str, arguments: Mapping[str, Any]) -> list[str]:
    """The names the call uses; SecretReferenceError (misplaced or malformed) or
    SecretNotGrantedError (same words whether or not the name exists)."""
    references = checked_references(tool, arguments)
    names = list(dict.fromkeys(r.name for r in references))
    missing = set(ungranted_names(agent=agent, names=names, tool=tool)) if names else set()
    for reference in references:
        if reference.name in missing:
            raise SecretNotGrantedError(f"{reference.where} {NOT_GRANTED}")
    return names


def call_secrets_resolve(
    *, agent: Agent, tool: str, arguments: Mapping[str, Any], invocation_id: uuid.UUID
) -> CallSecrets:
    """The arguments the tool runs with. Checked again here: a grant withdrawn or a
    secret revoked after the call was decided refuses the call before it runs."""
    references = checked_references(tool, arguments)
    if not references:
        return CallSecrets(arguments=dict(arguments), values=())
    granted = granted_secrets_for_call(
        agent=agent,
        tool=tool,
        names=[r.name for r in references],
        invocation_id=invocation_id,
    )
    values = tuple(g.value for g in granted.values())
    if tool in SEALED_TOOLS:
        unsealed = sorted(name for name, g in granted.items() if not g.hosts)
        if unsealed:
            # A grant made before values were sealed: never handed to the program.
            raise SecretNotGrantedError(
                f"{_slot(tool)} refers to {', '.join(unsealed)}, granted for {tool} "
                "without hosts; an admin grants it again with --host so that the console "
                "adds it to requests to those hosts (the program never holds the value)"
            )
        return CallSecrets(arguments=dict(arguments), values=values, sealed=tuple(granted.values()))
    _check_destination(granted, arguments)
    plain = {name: g.value for name, g in granted.items()}
    return CallSecrets(arguments=substitute(arguments, plain, tool), values=values)


def _slot(tool: str) -> str:
    """Where a tool's references stand, as an agent reads it (``arguments.credential``)."""
    path = SECRET_SLOTS[tool][0]
    return display_path(tuple(part for part in path if part != ANY_KEY))


def _check_destination(granted: Mapping[str, GrantedSecret], arguments: Mapping[str, Any]) -> None:
    """A console-made request (http_request) carries a secret whose grant names hosts
    only to those hosts."""
    limited = {name: g for name, g in granted.items() if g.hosts}
    if not limited:
        return
    try:
        endpoint = parse_url(str(arguments.get("url", "")))
    except NetworkTargetError as exc:
        raise SecretNotGrantedError(f"arguments.url cannot carry a secret: {exc}") from exc
    for name, g in limited.items():
        if not any(rule.matches(endpoint) for rule in parse_sealed_hosts(g.hosts)):
            raise SecretNotGrantedError(
                f"arguments.headers refers to {name}, granted for {', '.join(g.hosts)} only; "
                f"{endpoint.display()} is not one of them"
            )
