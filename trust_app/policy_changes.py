"""Changes to what an agent may do, told to whoever re-judges its waiting calls.

An agent's access level, trust, permissions and secret grants are written by trust_app
and secrets_app; calls already waiting for a person were decided against the state
before the change. Apps above them (approvals_app) register a listener when Django
starts; each writer names what changed with ``policy_changed_on_commit``, and the
listeners run once the change has committed, so they read the new state. A listener's
failure is logged and never undoes the change that was made (approving a call checks
the policy again).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import structlog
from django.db import transaction

from audit_app.record import Actor

log = structlog.get_logger("synthorg.trust")


@dataclass(frozen=True)
class PolicyChange:
    """What changed: for which agents (``None``: any agent), why, and who changed it."""

    agent_ids: frozenset[str] | None
    cause: str
    actor: Actor


PolicyListener = Callable[[PolicyChange], Any]
_listeners: list[PolicyListener] = []


def policy_change_listen(listener: PolicyListener) -> None:
    """Call ``listener`` after every committed change (registered once, at start)."""
    if listener not in _listeners:
        _listeners.append(listener)


def _tell(change: PolicyChange) -> None:
    for listener in list(_listeners):
        try:
            listener(change)
        except Exception:
            log.exception("policy_change_listener_failed", cause=change.cause)


def policy_changed_on_commit(*, agents: Iterable[Any] | None, cause: str, actor: Actor) -> None:
    """After the caller's transaction commits, tell the listeners that what ``agents``
    (agents or their ids; ``None`` for every agent) may do changed, because of ``cause``."""
    ids = None if agents is None else frozenset(str(getattr(a, "pk", a)) for a in agents)
    transaction.on_commit(lambda: _tell(PolicyChange(ids, cause, actor)))
