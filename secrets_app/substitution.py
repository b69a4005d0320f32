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

from secrets_app.broker import NOT_GRANTED, SecretNotGrantedError, secrets_for_call, ungranted_names
from secrets_app.references import checked_references, find_references, substitute
from trust_app.models import Agent


@dataclass(frozen=True)
class CallSecrets:
    """What a tool runs with: `arguments` with values substituted, and the `values`."""

    arguments: dict[str, Any]
    values: tuple[str, ...]


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
    values = secrets_for_call(
        agent=agent,
        tool=tool,
        names=[r.name for r in references],
        invocation_id=invocation_id,
    )
    return CallSecrets(arguments=substitute(arguments, values, tool), values=tuple(values.values()))
