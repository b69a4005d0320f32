"""The plain facts the approval policy reads about one call (no writes)."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from typing import Any

from approvals_app.policy.matching import CallFacts
from tools_app.contracts import ToolContract
from trust_app.models import Agent


def _workspace_roots(workspace: str) -> tuple[str, ...]:
    if not workspace:
        return ()
    given = posixpath.normpath(workspace)
    try:
        real = os.path.realpath(given)
    except OSError:
        return (given,)  # paths under the resolved form then stay absolute: no grant covers them
    return (given,) if real == given else (given, real)


def call_facts(agent: Agent, contract: ToolContract, arguments: Mapping[str, Any]) -> CallFacts:
    """The plain facts the approval policy reads about one call."""
    return CallFacts(
        agent=agent.name,
        autonomy=agent.autonomy,
        tool=contract.name,
        category=contract.category.value,
        action_type=contract.resolved_action_type,
        safety_class=contract.safety_class.value,
        arguments=arguments,
        argument_roles={name: role.value for name, role in contract.argument_roles.items()},
        workspace_roots=_workspace_roots(agent.workspace),
    )
