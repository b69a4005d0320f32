"""`{{ invocation|secrets_used }}`: the names of the secrets a call would use (never values)."""

from __future__ import annotations

from typing import Any

from django import template

from secrets_app.references import SecretReference, find_references

register = template.Library()


@register.filter
def secrets_used(invocation: Any) -> list[SecretReference]:
    """The references in the call's stored arguments (which hold references, never
    values; the redacted copy may hide a whole header that holds one)."""
    return find_references(getattr(invocation, "arguments", None) or {})


@register.simple_tag
def agent_secret_grants(agent: Any) -> list[Any]:
    """The agent's secret grants (names and uses, never values), for its page."""
    from secrets_app.selectors import agent_secret_grants as grants_of

    return grants_of(agent=agent)


@register.filter
def secret_destinations(invocation: Any) -> list[Any]:
    """Each secret the call refers to and the hosts its grant sends the value to now."""
    from secrets_app.selectors import call_secret_destinations

    return call_secret_destinations(
        agent=getattr(invocation, "agent", None),
        tool=getattr(invocation, "tool", ""),
        arguments=getattr(invocation, "arguments", None) or {},
    )
