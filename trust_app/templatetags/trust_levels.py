"""``{% effective_level agent as level %}``: the level that applies to an agent, and why."""

from __future__ import annotations

from typing import Any

from django import template

from trust_app.strategies.effective import EffectiveLevel

register = template.Library()


@register.simple_tag
def effective_level(agent: Any) -> EffectiveLevel:
    """The lower of the admin's level and the level trust holds ``agent`` at."""
    from trust_app.selectors.trust import agent_effective_level

    return agent_effective_level(agent)
