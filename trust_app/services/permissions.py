"""What an agent may do: check a proposed change, show its effect, and apply it with one audit row.

Proposals are checked like the config loader checks the YAML file: an unknown access
level, autonomy preset, tool, sub-constraint field or action type, or a cap on calls at
once out of bounds, is refused with the allowed values, every problem at once, each under
the name of the field it is about.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from pydantic import ValidationError

from audit_app.record import Actor, audit_record
from common.config.errors import problems_from
from common.errors import InvalidArgumentError
from common.settings_config import synthorg_config
from tools_app.registry import tool_catalog
from tools_app.selectors.invocations import permitted_tools
from tools_app.services.call_replay import DecidingSettings, calls_replay
from trust_app.concurrency import max_concurrent_calls_problem
from trust_app.models import Agent, AgentPermissions, Autonomy
from trust_app.policy import AgentPolicy, SubConstraintOverrides, build_agent_policy, name_key
from trust_app.policy.replay import CallReplay
from trust_app.policy_changes import policy_changed_on_commit
from trust_app.selectors.agents import agent_permissions, agent_policy
from trust_app.selectors.trust import agent_earned_levels_at, agent_effective_level_at
from trust_app.strategies.effective import EffectiveLevel


@dataclass(frozen=True)
class AgentPermissionsState:
    """An agent's settings as an admin edits them (and as the audit row records them)."""

    access_level: str
    autonomy: str
    allowed: tuple[str, ...] = ()
    denied: tuple[str, ...] = ()
    sub_constraints: Mapping[str, Any] = field(default_factory=dict)
    # Calls of the agent that run at once; None: the console default. The rest queue.
    max_concurrent_calls: int | None = None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["allowed"], data["denied"] = list(self.allowed), list(self.denied)
        data["sub_constraints"] = dict(self.sub_constraints)
        return data


@dataclass(frozen=True)
class PermissionsEffect:
    """What a change does: the tools an agent gains and loses, and the fields that change."""

    before: AgentPermissionsState
    after: AgentPermissionsState
    reachable: list[str]  # tools the agent could not use before and can after
    unreachable: list[str]  # tools it could use before and cannot after
    permitted_after: list[str]
    # The level that would apply after the change, and why (trust may hold the agent lower).
    level_after: EffectiveLevel | None = None

    @property
    def why_none(self) -> str:
        """Why a change of level reaches or loses no tool, when trust is the reason."""
        level = self.level_after
        if level is None or not level.lowered:
            return ""
        return (
            f"trust holds this agent at {level.level}, so tools above that level stay out of "
            f"reach whatever the admin's level ({level.reason})"
        )

    @property
    def changed_fields(self) -> list[str]:
        old, new = self.before.as_dict(), self.after.as_dict()
        return [name for name in old if old[name] != new[name]]

    @property
    def changed(self) -> bool:
        return bool(self.changed_fields)


def agent_permissions_state(agent: Agent) -> AgentPermissionsState:
    """The agent's current settings."""
    permissions = agent_permissions(agent)
    return AgentPermissionsState(
        access_level=agent.access_level,
        autonomy=agent.autonomy,
        allowed=tuple(permissions.allowed) if permissions else (),
        denied=tuple(permissions.denied) if permissions else (),
        sub_constraints=dict(permissions.sub_constraints) if permissions else {},
        max_concurrent_calls=agent.max_concurrent_calls,
    )


def _max_concurrent_calls(value: object, problems: dict[str, str]) -> int | None:
    """The cap, or a problem under its field name when it is not None or 1..10000."""
    problem = max_concurrent_calls_problem(
        value, default=settings.SYNTHORG_AGENT_MAX_CONCURRENT_CALLS
    )
    if problem:
        problems["max_concurrent_calls"] = problem
        return None
    return value if isinstance(value, int) else None


def _tool_names(
    field_name: str, names: Iterable[str], known: Mapping[str, str], problems: dict[str, str]
) -> tuple[str, ...]:
    result: list[str] = []
    unknown: list[str] = []
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        canonical = known.get(name_key(name))
        if canonical is None:
            unknown.append(name)
        elif canonical not in result:
            result.append(canonical)
    if unknown:
        problems[field_name] = (
            f"unknown tool {', '.join(repr(u) for u in unknown)}; "
            f"allowed values: {', '.join(sorted(known.values()))}"
        )
    return tuple(result)


def agent_permissions_check(
    *,
    access_level: str,
    autonomy: str,
    allowed: Iterable[str],
    denied: Iterable[str],
    sub_constraints: Mapping[str, Any] | None,
    max_concurrent_calls: int | None,
) -> AgentPermissionsState:
    """The proposal, normalised; InvalidArgumentError listing every problem by field."""
    config = synthorg_config()
    problems: dict[str, str] = {}
    levels = list(config.access_levels())
    if access_level not in levels:
        problems["access_level"] = (
            f"{access_level!r} is not allowed; allowed values: {', '.join(levels)}"
        )
    presets = [a.value for a in Autonomy]
    if autonomy not in presets:
        problems["autonomy"] = f"{autonomy!r} is not allowed; allowed values: {', '.join(presets)}"
    known = {name_key(c.name): c.name for c in tool_catalog()}
    allowed_names = _tool_names("allowed", allowed, known, problems)
    denied_names = _tool_names("denied", denied, known, problems)
    both = sorted(set(allowed_names) & set(denied_names))
    if both and "denied" not in problems:
        problems["denied"] = (
            f"{', '.join(both)} cannot be both allowed and denied (denied would win); "
            "remove it from one list"
        )
    overrides: dict[str, Any] = {}
    if sub_constraints:
        try:
            parsed = SubConstraintOverrides.model_validate(
                dict(sub_constraints), context={"action_types": config.action_types()}
            )
        except ValidationError as exc:
            for problem in problems_from(exc):
                key = f"sub_constraints.{problem.path}" if problem.path else "sub_constraints"
                problems[key] = problem.message
        else:
            overrides = parsed.model_dump(mode="json", exclude_none=True)
    cap = _max_concurrent_calls(max_concurrent_calls, problems)
    if problems:
        summary = "; ".join(f"{k}: {v}" for k, v in problems.items())
        raise InvalidArgumentError(summary, details={"problems": problems})
    return AgentPermissionsState(
        access_level=access_level,
        autonomy=autonomy,
        allowed=allowed_names,
        denied=denied_names,
        sub_constraints=overrides,
        max_concurrent_calls=cap,
    )


def _policy(agent: Agent, state: AgentPermissionsState, *, held: bool = True) -> AgentPolicy:
    """The policy the proposal would give, trust's hold on the agent included (unless
    ``held`` is false: the configured level alone)."""
    config = synthorg_config()
    overrides = (
        SubConstraintOverrides.model_validate(
            dict(state.sub_constraints), context={"action_types": config.action_types()}
        )
        if state.sub_constraints
        else None
    )
    return build_agent_policy(
        name=agent.name,
        level=state.access_level,
        levels=config.access_levels(),
        allowed=state.allowed,
        denied=state.denied,
        overrides=overrides,
        workspace=agent.workspace,
        path_resolver=os.path.realpath,
        earned=agent_earned_levels_at(agent, state.access_level) if held else None,
    )


def agent_permissions_effect(*, agent: Agent, proposal: AgentPermissionsState) -> PermissionsEffect:
    """Which tools the proposal makes reachable or unreachable; nothing is written."""
    before_tools = {entry["name"] for entry in permitted_tools(agent_policy(agent))}
    after_tools = [entry["name"] for entry in permitted_tools(_policy(agent, proposal))]
    return PermissionsEffect(
        before=agent_permissions_state(agent),
        after=proposal,
        reachable=sorted(set(after_tools) - before_tools),
        unreachable=sorted(before_tools - set(after_tools)),
        permitted_after=sorted(after_tools),
        level_after=agent_effective_level_at(agent, proposal.access_level),
    )


def agent_permissions_replay(*, agent: Agent, proposal: AgentPermissionsState) -> CallReplay:
    """What the proposal would have done to the agent's recent calls; nothing is written.

    Each call is decided again with the current settings and with the proposal, both
    under the trust the agent has earned now; where trust holds the agent below the
    proposed level, also as if it did not, so the page can say when trust makes the
    change moot.
    """
    candidate = _policy(agent, proposal)
    held = agent_effective_level_at(agent, proposal.access_level)
    unheld = None
    if candidate.category_policies:
        unheld = DecidingSettings(_policy(agent, proposal, held=False), proposal.autonomy)
    return calls_replay(
        agent=agent,
        current=DecidingSettings(agent_policy(agent), agent.autonomy),
        candidate=DecidingSettings(candidate, proposal.autonomy),
        unheld=unheld,
        held_at=held.level if held.lowered else "",
        days=settings.SYNTHORG_PERMISSION_REPLAY_DAYS,
        limit=settings.SYNTHORG_PERMISSION_REPLAY_CALLS,
    )


@transaction.atomic
def agent_permissions_update(
    *,
    agent: Agent,
    actor: Actor,
    access_level: str,
    autonomy: str,
    allowed: Iterable[str],
    denied: Iterable[str],
    sub_constraints: Mapping[str, Any] | None,
    max_concurrent_calls: int | None,
) -> PermissionsEffect:
    """Apply an admin's change to an agent, with one audit event holding before and after."""
    proposal = agent_permissions_check(
        access_level=access_level,
        autonomy=autonomy,
        allowed=allowed,
        denied=denied,
        sub_constraints=sub_constraints,
        max_concurrent_calls=max_concurrent_calls,
    )
    # Lock the agent so two admins' edits apply one after the other, each audited
    # against the state it actually replaced.
    locked = Agent.objects.select_for_update(no_key=True).get(pk=agent.pk)
    effect = agent_permissions_effect(agent=locked, proposal=proposal)
    if not effect.changed:
        return effect
    Agent.objects.filter(pk=locked.pk).update(
        access_level=proposal.access_level,
        autonomy=proposal.autonomy,
        max_concurrent_calls=proposal.max_concurrent_calls,
    )
    AgentPermissions.objects.update_or_create(
        agent=locked,
        defaults={
            "allowed": list(proposal.allowed),
            "denied": list(proposal.denied),
            "sub_constraints": dict(proposal.sub_constraints),
        },
    )
    audit_record(
        kind="agent.permissions_updated",
        actor=actor,
        agent=locked,
        outcome="updated",
        reason="changed: " + ", ".join(effect.changed_fields),
        data={
            "before": effect.before.as_dict(),
            "after": effect.after.as_dict(),
            "reachable": effect.reachable,
            "unreachable": effect.unreachable,
        },
    )
    policy_changed_on_commit(
        agents=[locked],
        cause=f"{actor.name} changed the agent's "
        + ", ".join(name.replace("_", " ") for name in effect.changed_fields),
        actor=actor,
    )
    agent.refresh_from_db()
    return effect
