"""Reads about agents for the console pages: the filtered list, tokens, recent calls."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from tools_app.models import Invocation, InvocationStatus
from trust_app.models import Agent, AgentToken

RECENT_DENIALS_WINDOW = timedelta(hours=24)
RECENT_INVOCATIONS = 20


@dataclass(frozen=True)
class AgentListFilters:
    q: str = ""
    level: str = ""
    autonomy: str = ""
    active: str = ""  # "yes", "no" or "" for either
    denials: bool = False  # only agents refused at least once in the window


def agent_list(filters: AgentListFilters) -> QuerySet[Agent]:
    """Agents matching the filters, each with `recent_denials` over the last 24 hours."""
    since = timezone.now() - RECENT_DENIALS_WINDOW
    agents = Agent.objects.select_related("owner").annotate(
        recent_denials=Count(
            "invocations",
            filter=Q(
                invocations__status=InvocationStatus.DENIED, invocations__created_at__gte=since
            ),
        )
    )
    if filters.q:
        agents = agents.filter(
            Q(name__icontains=filters.q) | Q(owner__username__icontains=filters.q)
        )
    if filters.level:
        agents = agents.filter(access_level=filters.level)
    if filters.autonomy:
        agents = agents.filter(autonomy=filters.autonomy)
    if filters.active in ("yes", "no"):
        agents = agents.filter(active=filters.active == "yes")
    if filters.denials:
        agents = agents.filter(recent_denials__gt=0)
    return agents.order_by("name")


def agent_get(agent_id: uuid.UUID) -> Agent | None:
    return Agent.objects.select_related("owner").filter(id=agent_id).first()


def agent_tokens(agent: Agent) -> list[AgentToken]:
    """The agent's tokens, live ones first (the plaintext is never stored)."""
    return list(
        AgentToken.objects.filter(agent=agent).order_by(
            F("revoked_at").asc(nulls_first=True), "-created_at"
        )
    )


def agent_recent_invocations(agent: Agent, limit: int = RECENT_INVOCATIONS) -> list[Invocation]:
    return list(Invocation.objects.filter(agent=agent).order_by("-created_at")[:limit])
