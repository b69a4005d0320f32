"""The agent's permitted tools and its loaded L2 bodies, read and written in the worker.

Discovery tools answer from the console's registry and policy, not from a sandbox:
they run in the worker, where Django is set up, load the calling agent and decide
with the same selectors the REST API uses, so ``load_tool`` refuses exactly what
``GET /api/v1/tools/<name>/`` answers 404 for.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from tools_app.builtin.base import RefusalCode, ToolRefusedError
from tools_app.builtin.discovery.budget import (
    DisclosureSettings,
    LoadedBody,
    LoadResult,
    spend_l2_budget,
)
from tools_app.contracts import ToolContract
from tools_app.models import ToolDisclosureState
from trust_app.models import Agent


def _policy(agent_id: str) -> Any:
    from trust_app.selectors.agents import agent_policy

    return agent_policy(Agent.objects.get(id=agent_id))


def permitted_entries(agent_id: str) -> list[dict[str, Any]]:
    """L1 entries of every tool this agent may use, in registry order."""
    from tools_app.selectors.invocations import permitted_tools

    return permitted_tools(_policy(agent_id))


def permitted_contract_or_refuse(agent_id: str, name: str) -> ToolContract:
    """The tool's contract, refused alike when it is unknown, disabled or not permitted."""
    from tools_app.selectors.invocations import permitted_contract

    contract = permitted_contract(_policy(agent_id), name)
    if contract is None:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT,
            f"no tool named {name!r} is available to you; list_tools shows the ones you may use",
        )
    return contract


def loaded_bodies(agent_id: str, task_id: str | None) -> tuple[LoadedBody, ...]:
    """The L2 bodies loaded in this agent task, oldest first."""
    state = ToolDisclosureState.objects.filter(agent_id=agent_id, task_id=task_id or "").first()
    return _bodies(state.loaded if state else [])


def _bodies(raw: list[dict[str, Any]]) -> tuple[LoadedBody, ...]:
    return tuple(LoadedBody(name=str(b["name"]), tokens=int(b["tokens"])) for b in raw)


def disclosure_load(
    *, agent_id: str, task_id: str | None, body: LoadedBody, budget: DisclosureSettings
) -> LoadResult:
    """Record ``body`` as loaded for this agent task, unloading the oldest past the budget.

    The state row is locked so two loads in the same task apply one after the other.
    """
    with transaction.atomic():
        state, _ = ToolDisclosureState.objects.select_for_update().get_or_create(
            agent_id=agent_id, task_id=task_id or ""
        )
        result = spend_l2_budget(_bodies(state.loaded), body, budget)
        state.loaded = [b.as_dict() for b in result.loaded]
        state.save(update_fields=["loaded", "updated_at"])
    return result
