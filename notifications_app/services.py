"""The only writers of notifications: queue them with their event, deliver them.

``notifications_queue`` runs inside the transaction of the event it reports (the
request opened, escalated or settled), so the rows exist exactly when the event
does. Delivery takes a lease on a row with a compare-and-set (any node, any worker,
SQLite or PostgreSQL), sends it, and records the outcome; a failure waits a
doubling backoff, and after the last attempt the row is failed and audited.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import structlog
from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from common.config.notifications import NotificationEvent, NotificationsSection
from common.settings_config import synthorg_config
from notifications_app import messages
from notifications_app.models import DeliveryStatus, Notification
from notifications_app.senders import DeliveryError, send

DELIVER_TASK = "notifications_app.deliver_notification"
log = structlog.get_logger("synthorg.notifications")

SWEEP_BATCH = 100


def _section() -> NotificationsSection:
    return synthorg_config().notifications


def console_url(section: NotificationsSection) -> str:
    return section.console_url or settings.SYNTHORG_CONSOLE_URL


def _decision_reason(request: Any) -> str:
    """The reason the last person to decide gave (a denial's reason, an approval's note)."""
    reasons = request.decisions.order_by("-created_at").values_list("reason", flat=True)
    return str(reasons.first() or "")


def request_facts(request: Any, event: str) -> dict[str, Any]:
    """What a message says about ``request`` (an ApprovalRequest with its invocation)."""
    invocation = request.invocation
    decision_reason = _decision_reason(request) if event == NotificationEvent.DECIDED else ""
    return {
        "event": event,
        "request_id": str(request.id),
        "arguments_hash": request.arguments_hash,
        "status": request.status,
        "risk_tier": request.risk_tier,
        "agent": invocation.agent.name,
        "agent_id": str(invocation.agent_id),
        "team": invocation.agent.team.name,
        "invocation_id": str(invocation.id),
        "tool": invocation.tool,
        "category": invocation.category,
        "action_type": invocation.action_type,
        "reason": request.reason,
        "rule": request.rule,
        "required_approvals": request.required_approvals,
        "approvals": request.approvals,
        "created_at": request.created_at.isoformat(),
        "expires_at": request.expires_at.isoformat(),
        "decided_by": request.decided_by,
        "decision_reason": decision_reason,
        "link": messages.inbox_link(console_url(_section()), str(request.id)),
    }


def notifications_queue(request: Any, event: NotificationEvent) -> int:
    """Queue ``event`` of ``request`` for every channel that wants it (in the caller's
    transaction); each row is sent once the transaction commits. Returns how many."""
    section = _section()
    team = request.invocation.agent.team.name
    channels = [c for c in section.channels if c.wants(event, request.risk_tier, team)]
    if not channels:
        return 0
    facts = request_facts(request, event)
    now = timezone.now()
    queued: list[int] = []
    for channel in channels:
        try:
            with transaction.atomic():  # a savepoint: a duplicate leaves the event's work intact
                row = Notification.objects.create(
                    channel=channel.name,
                    channel_type=channel.type,
                    event=event,
                    approval_id=request.id,
                    facts=facts,
                    next_attempt_at=now,
                )
        except IntegrityError:
            continue  # another node or sweep queued this event for this channel already
        queued.append(row.id)
    if queued:
        transaction.on_commit(functools.partial(_dispatch, queued))
    return len(queued)


def _dispatch(ids: Iterable[int]) -> None:
    # By name (notifications_app.tasks.deliver_notification): the task module imports
    # these services, never the other way round.
    for notification_id in ids:
        try:
            current_app.send_task(DELIVER_TASK, args=[notification_id])
        except Exception:  # the broker is down: the sweep sends it later
            log.warning("notification.dispatch_failed", notification=notification_id, exc_info=True)


def _backoff(attempts: int) -> timedelta:
    base = settings.SYNTHORG_NOTIFICATION_RETRY_SECONDS
    return timedelta(seconds=min(base * 2 ** max(attempts - 1, 0), 3600))


def _lease() -> timedelta:
    return timedelta(seconds=2 * settings.SYNTHORG_NOTIFICATION_TIMEOUT_SECONDS + 5)


def _claim(notification_id: int, now: datetime) -> Notification | None:
    """Take the row for one attempt, or None when it is not due or another worker has it."""
    taken = Notification.objects.filter(
        id=notification_id, status=DeliveryStatus.PENDING, next_attempt_at__lte=now
    ).update(next_attempt_at=now + _lease())
    return Notification.objects.get(id=notification_id) if taken else None


def notification_deliver(*, notification_id: int, now: datetime | None = None) -> str:
    """One attempt at sending one notification: ``sent``, ``retry``, ``failed`` or ``skipped``."""
    now = now or timezone.now()
    row = _claim(notification_id, now)
    if row is None:
        return "skipped"
    channel = _section().channel(row.channel)
    try:
        if channel is None:
            raise DeliveryError(f"no channel named {row.channel!r} in the config any more")
        if not channel.enabled:
            raise DeliveryError(f"the channel {row.channel!r} is disabled in the config")
        send(channel, str(row.id), row.facts)
    except DeliveryError as exc:
        return _record_failure(row, str(exc), now)
    Notification.objects.filter(id=row.id).update(
        status=DeliveryStatus.SENT, sent_at=timezone.now(), attempts=row.attempts + 1, last_error=""
    )
    log.info(
        "notification.sent", channel=row.channel, kind=row.event, approval=str(row.approval_id)
    )
    return "sent"


def _record_failure(row: Notification, error: str, now: datetime) -> str:
    attempts = row.attempts + 1
    log.warning(
        "notification.failed_attempt",
        channel=row.channel,
        kind=row.event,
        attempt=attempts,
        error=error,
    )
    if attempts < settings.SYNTHORG_NOTIFICATION_MAX_ATTEMPTS:
        Notification.objects.filter(id=row.id).update(
            attempts=attempts, last_error=error[:2000], next_attempt_at=now + _backoff(attempts)
        )
        return "retry"
    from audit_app.record import Actor, audit_record

    with transaction.atomic():
        Notification.objects.filter(id=row.id).update(
            attempts=attempts, last_error=error[:2000], status=DeliveryStatus.FAILED
        )
        audit_record(
            kind="notification.failed",
            actor=Actor.system("notifications"),
            outcome="failed",
            reason=f"{row.event} of request {row.approval_id} to {row.channel}: {error}"[:2000],
            data={
                "channel": row.channel,
                "event": row.event,
                "approval": str(row.approval_id),
                "attempts": attempts,
            },
        )
    return "failed"


def notifications_deliver_due(*, now: datetime | None = None) -> int:
    """The sweep: send what is due (retries, and rows whose dispatch was lost)."""
    now = now or timezone.now()
    due = list(
        Notification.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
        .order_by("next_attempt_at")
        .values_list("id", flat=True)[:SWEEP_BATCH]
    )
    return sum(notification_deliver(notification_id=i, now=now) == "sent" for i in due)


def notifications_expiring_due(*, now: datetime | None = None) -> int:
    """Queue ``expiring`` for pending requests whose time runs out within the configured lead."""
    section = _section()
    if not any(NotificationEvent.EXPIRING in c.events for c in section.channels):
        return 0
    from approvals_app.models import ApprovalRequest, ApprovalStatus

    now = now or timezone.now()
    within = now + timedelta(seconds=section.expiring_within_seconds)
    announced = Notification.objects.filter(event=NotificationEvent.EXPIRING).values("approval_id")
    due = (
        ApprovalRequest.objects.filter(
            status=ApprovalStatus.PENDING, expires_at__gt=now, expires_at__lte=within
        )
        .exclude(id__in=announced)
        .select_related("invocation", "invocation__agent")
        .order_by("expires_at")[:SWEEP_BATCH]
    )
    queued = 0
    for request in due:
        with transaction.atomic():
            queued += notifications_queue(request, NotificationEvent.EXPIRING)
    return queued
