"""The agent's recent calls of a request's tool, read for ``pattern_reach`` (no writes)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from django.conf import settings
from django.utils import timezone

from approvals_app.models import ApprovalRequest
from approvals_app.policy.matching import CallFacts
from approvals_app.policy.pattern_reach import ASKED, RAN, REFUSED, PastCall
from approvals_app.selectors.facts import call_facts
from tools_app.models import Invocation, InvocationStatus
from tools_app.registry import tool_catalog

REFUSED_STATUSES: Final = frozenset({InvocationStatus.DENIED})


def request_facts(request: ApprovalRequest) -> CallFacts | None:
    """The pending call's facts as a grant reads them; None for a tool not known here."""
    invocation = request.invocation
    contract = tool_catalog().contract(invocation.tool)
    if contract is None:
        return None
    arguments = invocation.arguments if isinstance(invocation.arguments, dict) else {}
    return call_facts(invocation.agent, contract, arguments)


def recent_calls(
    request: ApprovalRequest, *, now: datetime | None = None
) -> tuple[list[PastCall], bool]:
    """The agent's calls of the request's tool in the window, newest first, but the
    request's own; and whether the window held more than were read."""
    invocation = request.invocation
    contract = tool_catalog().contract(invocation.tool)
    if contract is None:
        return [], False
    now = now or timezone.now()
    since = now - timedelta(hours=settings.SYNTHORG_PATTERN_REACH_HOURS)
    limit = int(settings.SYNTHORG_PATTERN_REACH_CALLS)
    rows = list(
        Invocation.objects.filter(
            agent_id=invocation.agent_id, tool=invocation.tool, created_at__gte=since
        )
        .exclude(id=invocation.id)
        .order_by("-created_at")
        .values_list("id", "arguments", "arguments_hash", "status", "created_at", "approval__id")[
            : limit + 1
        ]
    )
    agent = invocation.agent
    calls = [
        PastCall(
            id=str(call_id),
            facts=call_facts(agent, contract, arguments if isinstance(arguments, dict) else {}),
            digest=digest,
            fate=ASKED if asked else REFUSED if status in REFUSED_STATUSES else RAN,
            when=created.isoformat(timespec="seconds"),
        )
        for call_id, arguments, digest, status, created, asked in rows[:limit]
    ]
    return calls, len(rows) > limit
