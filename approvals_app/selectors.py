"""Reads about approval requests and grants for services, views, consumers and the API."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from approvals_app.models import ApprovalGrant, ApprovalRequest, ApprovalStatus, RiskTier

RISK_ORDER = (RiskTier.CRITICAL, RiskTier.HIGH, RiskTier.MEDIUM, RiskTier.LOW)


def approval_requests(*, status: str | None = None) -> QuerySet[ApprovalRequest]:
    """Requests with what the inbox and the API show, oldest deadline first."""
    queryset = ApprovalRequest.objects.select_related(
        "invocation", "invocation__agent", "invocation__agent__owner"
    ).prefetch_related("decisions")
    if status:
        queryset = queryset.filter(status=status)
    return queryset.order_by("expires_at", "created_at")


def approval_request(request_id: uuid.UUID | str) -> ApprovalRequest | None:
    """One request with its invocation and agent, or None."""
    try:
        return approval_requests().filter(id=request_id).first()
    except (ValueError, TypeError):
        return None


def approvals_pending_by_risk() -> list[tuple[str, list[ApprovalRequest]]]:
    """Pending requests grouped by risk tier, most serious first (every tier listed)."""
    groups: dict[str, list[ApprovalRequest]] = {tier.value: [] for tier in RISK_ORDER}
    for request in approval_requests(status=ApprovalStatus.PENDING):
        groups.setdefault(request.risk_tier, []).append(request)
    return [(tier.value, groups[tier.value]) for tier in RISK_ORDER]


def approvals_pending_count() -> int:
    """How many requests wait for a decision."""
    return ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING).count()


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


def approval_grants(*, live_only: bool = True) -> QuerySet[ApprovalGrant]:
    """Grants for the inbox's list, newest first."""
    queryset = ApprovalGrant.objects.select_related("agent")
    if live_only:
        queryset = queryset.filter(Q(revoked_at__isnull=True) & Q(expires_at__gt=timezone.now()))
    return queryset.order_by("-created_at")
