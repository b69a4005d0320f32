"""Roles belong to people: an agent's principal holds none (an error page drawn for an
agent's request asks, and must get an answer rather than fail)."""

from __future__ import annotations

from common.context_processors import person
from common.roles import primary_role, roles_of
from tools_app.api.auth import AgentPrincipal
from trust_app.models import Agent


class _Request:
    def __init__(self, user: object) -> None:
        self.user = user


def test_an_agents_principal_holds_no_role_and_the_layout_draws_for_it() -> None:
    principal = AgentPrincipal(agent=Agent(name="an-agent"))
    assert roles_of(principal) == frozenset()
    assert primary_role(principal) is None
    context = person(_Request(principal))  # type: ignore[arg-type]
    assert context["person_roles"] == frozenset() and not context["can_admin"]


def test_an_anonymous_visitor_holds_no_role_either() -> None:
    assert roles_of(None) == frozenset()
    assert person(_Request(None))["person_role"] is None  # type: ignore[arg-type]
