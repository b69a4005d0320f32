"""Figures for the dashboard: calls per hour by outcome, approvals, denials by rule, health."""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count
from django.db.models.functions import TruncHour
from django.utils import timezone

from approvals_app.models import ApprovalRequest
from approvals_app.selectors.requests import inbox_pending
from audit_app.models import AuditEvent
from common.team_scope import EVERYWHERE, TeamScope
from synthorg_site.health import health_report

WINDOW_HOURS = 24
TOP_RULES = 10
DECISION_SAMPLE = 1000  # newest decided approvals the median is taken over
DECIDED_KIND = "invocation.decided"


def _hours(now: datetime) -> list[datetime]:
    last = now.replace(minute=0, second=0, microsecond=0)
    return [last - timedelta(hours=h) for h in range(WINDOW_HOURS - 1, -1, -1)]


def calls_per_hour(now: datetime) -> dict[str, Any]:
    """Decided calls per hour over the last day, one series per outcome."""
    hours = _hours(now)
    rows = (
        AuditEvent.objects.filter(kind=DECIDED_KIND, created_at__gte=hours[0])
        .annotate(hour=TruncHour("created_at"))
        .values("hour", "outcome")
        .annotate(n=Count("id"))
    )
    index = {hour: i for i, hour in enumerate(hours)}
    series: dict[str, list[int]] = {}
    for row in rows:
        slot = index.get(row["hour"])
        if slot is not None:
            series.setdefault(row["outcome"] or "unknown", [0] * len(hours))[slot] += row["n"]
    return {"labels": [h.strftime("%H:00") for h in hours], "series": dict(sorted(series.items()))}


def denials_by_rule(now: datetime) -> dict[str, Any]:
    """The rules that refused calls most over the last day."""
    rows = (
        AuditEvent.objects.filter(
            kind=DECIDED_KIND, outcome="deny", created_at__gte=now - timedelta(hours=WINDOW_HOURS)
        )
        .values("rule")
        .annotate(n=Count("id"))
        .order_by("-n", "rule")[:TOP_RULES]
    )
    return {"labels": [r["rule"] or "(none)" for r in rows], "counts": [r["n"] for r in rows]}


def median_decision_seconds(now: datetime) -> float | None:
    """Median time from approval request to a person's decision, over the last day."""
    decided = (
        ApprovalRequest.objects.filter(
            decided_at__isnull=False, decided_at__gte=now - timedelta(hours=WINDOW_HOURS)
        )
        .order_by("-decided_at")
        .values_list("created_at", "decided_at")[:DECISION_SAMPLE]
    )
    waits = [(done - asked).total_seconds() for asked, done in decided if done is not None]
    return statistics.median(waits) if waits else None


def dashboard_metrics(scope: TeamScope = EVERYWHERE) -> dict[str, Any]:
    """Everything the dashboard charts, as plain JSON-ready data (what waits: of the
    teams ``scope`` admits)."""
    now = timezone.now()
    health = health_report()
    # The same count as the navigation's badge, so the two never disagree.
    pending = inbox_pending(scope)
    return {
        "generated_at": now.isoformat(),
        "calls_per_hour": calls_per_hour(now),
        "denials_by_rule": denials_by_rule(now),
        "pending_approvals": pending.approvals,
        "pending_promotions": pending.promotions,
        "pending_in_inbox": pending.total,
        "median_decision_seconds": median_decision_seconds(now),
        "health": health,
        "backends": {name: part["ok"] for name, part in health["parts"].items()},
    }


def chart_tables(metrics: dict[str, Any]) -> dict[str, Any]:
    """The charts' data as rows of text tables, for people who do not read the canvas."""
    calls = metrics["calls_per_hour"]
    outcomes = list(calls["series"])
    call_rows = [
        {"hour": hour, "counts": [calls["series"][o][i] for o in outcomes]}
        for i, hour in enumerate(calls["labels"])
    ]
    denials = metrics["denials_by_rule"]
    return {
        "outcomes": outcomes,
        "calls": call_rows,
        "denials": list(zip(denials["labels"], denials["counts"], strict=True)),
    }
