"""Reads about approval requests and grants for services, views, consumers and the API."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

from approvals_app.models import ApprovalGrant, ApprovalRequest, ApprovalStatus, RiskTier
from common.team_scope import EVERYWHERE, TeamScope
from trust_app.selectors.teams import team_q

# The team of the agent that asked: what a person's team scope is checked against.
REQUEST_TEAM = "invocation__agent__team_id"

RISK_ORDER = (RiskTier.CRITICAL, RiskTier.HIGH, RiskTier.MEDIUM, RiskTier.LOW)


def approval_requests(
    *, status: str | None = None, scope: TeamScope = EVERYWHERE
) -> QuerySet[ApprovalRequest]:
    """Requests (of the teams ``scope`` admits) with what the inbox and the API show,
    oldest deadline first."""
    queryset = (
        ApprovalRequest.objects.select_related(
            "invocation", "invocation__agent", "invocation__agent__owner"
        )
        .prefetch_related("decisions")
        .filter(team_q(scope, REQUEST_TEAM))
    )
    if status:
        queryset = queryset.filter(status=status)
    return queryset.order_by("expires_at", "created_at")


def approval_request(
    request_id: uuid.UUID | str, *, scope: TeamScope = EVERYWHERE
) -> ApprovalRequest | None:
    """One request with its invocation and agent, or None (also when ``scope`` does not
    admit its agent's team)."""
    try:
        return approval_requests(scope=scope).filter(id=request_id).first()
    except (ValueError, TypeError):
        return None


def approvals_pending_by_risk() -> list[tuple[str, list[ApprovalRequest]]]:
    """Pending requests grouped by risk tier, most serious first (every tier listed)."""
    groups: dict[str, list[ApprovalRequest]] = {tier.value: [] for tier in RISK_ORDER}
    for request in approval_requests(status=ApprovalStatus.PENDING):
        groups.setdefault(request.risk_tier, []).append(request)
    return [(tier.value, groups[tier.value]) for tier in RISK_ORDER]


def approvals_pending_count() -> int:
    """How many approval requests wait for a decision."""
    return ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING).count()


@dataclass(frozen=True)
class InboxPending:
    """What waits in the inbox, by kind; the badge and the dashboard both read this."""

    approvals: int
    promotions: int

    @property
    def total(self) -> int:
        return self.approvals + self.promotions


def inbox_pending(scope: TeamScope = EVERYWHERE) -> InboxPending:
    """Pending approval requests and promotion requests, counted in one statement.

    One statement, as every live inbox asks it on every change, and so that the two
    numbers are from the same moment (a person of some teams only: two counts of theirs).
    """
    from trust_app.models import PromotionRequest, PromotionStatus

    if not scope.everywhere:
        approval_rows = ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING)
        promotion_rows = PromotionRequest.objects.filter(status=PromotionStatus.PENDING)
        return InboxPending(
            approvals=approval_rows.filter(team_q(scope, REQUEST_TEAM)).count(),
            promotions=promotion_rows.filter(team_q(scope, "agent__team_id")).count(),
        )

    approvals = ApprovalRequest._meta.db_table
    promotions = PromotionRequest._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT COUNT(*) FROM {approvals} WHERE status = %s),"  # noqa: S608
            f" (SELECT COUNT(*) FROM {promotions} WHERE status = %s)",
            [ApprovalStatus.PENDING.value, PromotionStatus.PENDING.value],
        )
        row = cursor.fetchone()
    if not row:
        return InboxPending(approvals=0, promotions=0)
    return InboxPending(approvals=int(row[0]), promotions=int(row[1]))


def inbox_pending_count(scope: TeamScope = EVERYWHERE) -> int:
    """What waits in the inbox (approvals and promotions): the navigation's badge."""
    return inbox_pending(scope).total


def promotion_request(promotion_id: uuid.UUID | str, *, scope: TeamScope = EVERYWHERE) -> Any:
    """One promotion request with its agent, or None (also outside ``scope``)."""
    from trust_app.models import PromotionRequest

    try:
        rows = PromotionRequest.objects.select_related("agent")
        return rows.filter(team_q(scope, "agent__team_id")).filter(id=promotion_id).first()
    except (ValueError, TypeError):
        return None


def approval_grants_live(
    *, agent: Any, tool: str | None = None, now: datetime | None = None
) -> QuerySet[ApprovalGrant]:
    """Unrevoked, unexpired grants of ``agent`` (for ``tool`` when given)."""
    now = now or timezone.now()
    queryset = ApprovalGrant.objects.filter(
        agent=agent, revoked_at__isnull=True, expires_at__gt=now
    )
    if tool is not None:
        queryset = queryset.filter(tool__iexact=tool)
    return queryset


def approval_grants(
    *, live_only: bool = True, scope: TeamScope = EVERYWHERE
) -> QuerySet[ApprovalGrant]:
    """Grants (of the agents of the teams ``scope`` admits) for the inbox's list, newest first."""
    queryset = ApprovalGrant.objects.select_related("agent").filter(team_q(scope, "agent__team_id"))
    if live_only:
        queryset = queryset.filter(Q(revoked_at__isnull=True) & Q(expires_at__gt=timezone.now()))
    return queryset.order_by("-created_at")
