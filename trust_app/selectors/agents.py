"""Reads about agents for services, views and the API."""

from __future__ import annotations

import os

from common.settings_config import synthorg_config
from trust_app.models import Agent, AgentPermissions
from trust_app.policy import AgentPolicy, SubConstraintOverrides, build_agent_policy


def agent_permissions(agent: Agent) -> AgentPermissions | None:
    try:
        return agent.permissions
    except AgentPermissions.DoesNotExist:
        return None


def agent_overrides(agent: Agent) -> SubConstraintOverrides | None:
    permissions = agent_permissions(agent)
    if permissions is None or not permissions.sub_constraints:
        return None
    config = synthorg_config()
    return SubConstraintOverrides.model_validate(
        permissions.sub_constraints, context={"action_types": config.action_types()}
    )


def agent_policy(agent: Agent) -> AgentPolicy:
    """The agent's effective policy: its level from the config, its lists and overrides.

    The configured level is a ceiling: where the agent has earned less trust,
    that category is decided at the stricter of the two.
    """
    from trust_app.selectors.trust import agent_earned_levels

    config = synthorg_config()
    permissions = agent_permissions(agent)
    return build_agent_policy(
        name=agent.name,
        level=agent.access_level,
        levels=config.access_levels(),
        allowed=permissions.allowed if permissions else (),
        denied=permissions.denied if permissions else (),
        overrides=agent_overrides(agent),
        workspace=agent.workspace,
        path_resolver=os.path.realpath,
        earned=agent_earned_levels(agent),
    )


def agent_cap(agent: Agent) -> int:
    """How many of the agent's calls may run at once: its own setting, else the
    console default (SYNTHORG_AGENT_MAX_CONCURRENT_CALLS)."""
    from django.conf import settings

    own = agent.max_concurrent_calls
    return int(own) if own else int(settings.SYNTHORG_AGENT_MAX_CONCURRENT_CALLS)
