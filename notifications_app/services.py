"""The only writers of notifications: queue them with their event, deliver them.

``notifications_queue`` runs inside the transaction of the event it reports (the
request opened, escalated or settled), so the rows exist exactly when the event
does. Delivery takes a lease on a row with a compare-and-set (any node, any worker,
SQLite or PostgreSQL), sends it, and records the outcome; a failure waits a
doubling backoff, and after the last attempt the row is failed and audited.

A burst is told once: the first event about one agent's requests of one risk tier
goes out at once, and those that follow within the digest window are held; the
sweep sends each burst's held rows as one digest (one row carries the message, the
others are marked as counted in it), so every request is still counted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import structlog
from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit_app.record import Actor, audit_record
from common.config.notifications import NotificationEvent, NotificationsSection, PushChannel
from common.settings_config import synthorg_config
from notifications_app import digests, messages
from notifications_app.models import DeliveryStatus, Notification, PushSubscription
from notifications_app.push import PushSubscriptionRefused, checked_subscription
from notifications_app.senders import DeliveryError, send

DELIVER_TASK = "notifications_app.deliver_notification"
log = structlog.get_logger("synthorg.notifications")

SWEEP_BATCH = 100
# Rows one digest counts at most; a larger burst is told in several.
DIGEST_MAX_ROWS = 5000

EffectLine = Callable[[Any], str]
_effect_sources: list[EffectLine] = []


def notifications_effect_register(source: EffectLine) -> None:
    """Name how a call's effect line is stated (the approval cards' first line): the
    app that draws cards gives it here, so messages say what the card says."""
    _effect_sources[:] = [source]


def _effect(invocation: Any) -> str:
    if not _effect_sources:
        return ""
    try:
        return _effect_sources[0](invocation)
    except Exception:  # a message without its effect line beats no message
        log.warning("notification.effect_failed", invocation=str(invocation.id), exc_info=True)
        return ""


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
        "effect": _effect(invocation),
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
    window = timedelta(seconds=section.digest_window_seconds)
    queued: list[int] = []
    for channel in channels:
        key = digests.batch_key(event, facts) if channel.digest and window else ""
        held = bool(key) and _burst_open(channel.name, key, now - window)
        try:
            with transaction.atomic():  # a savepoint: a duplicate leaves the event's work intact
                row = Notification.objects.create(
                    channel=channel.name,
                    channel_type=channel.type,
                    event=event,
                    approval_id=request.id,
                    facts=facts,
                    batch_key=key,
                    held=held,
                    next_attempt_at=now + window if held else now,
                )
        except IntegrityError:
            continue  # another node or sweep queued this event for this channel already
        if not held:
            queued.append(row.id)
    if queued:
        transaction.on_commit(functools.partial(_dispatch, queued))
    return len(queued)


def _burst_open(channel: str, key: str, since: datetime) -> bool:
    """True when an event alike was queued for ``channel`` since ``since``: this one
    waits for the burst's digest."""
    return Notification.objects.filter(
        channel=channel, batch_key=key, created_at__gte=since
    ).exists()


def notifications_digests_flush(*, now: datetime | None = None) -> int:
    """Send each burst whose window has closed as one message; returns how many."""
    now = now or timezone.now()
    due = (
        Notification.objects.filter(
            status=DeliveryStatus.PENDING, held=True, next_attempt_at__lte=now
        )
        .values_list("channel", "batch_key")
        .distinct()[:SWEEP_BATCH]
    )
    carriers = [c for c in (_digest_gather(ch, key, now) for ch, key in set(due)) if c is not None]
    _dispatch(carriers)
    return len(carriers)


def _digest_gather(channel: str, key: str, now: datetime) -> int | None:
    """Make the oldest held row of a burst carry the digest of every held row alike;
    None when another worker took the burst first."""
    with transaction.atomic():
        rows = list(
            Notification.objects.filter(
                channel=channel, batch_key=key, status=DeliveryStatus.PENDING, held=True
            ).order_by("created_at", "id")[:DIGEST_MAX_ROWS]
        )
        if not rows:
            return None
        carrier = rows[0]
        # The compare-and-set on the carrier: the loser of a race stops here.
        held = Notification.objects.filter(id=carrier.id, status=DeliveryStatus.PENDING, held=True)
        if not held.update(held=False, next_attempt_at=now):
            return None
        if len(rows) == 1:
            return carrier.id  # a burst of one is told as itself
        Notification.objects.filter(
            id__in=[row.id for row in rows[1:]], status=DeliveryStatus.PENDING, held=True
        ).update(status=DeliveryStatus.DIGESTED, held=False, digest_carrier=carrier)
        counted = set(
            Notification.objects.filter(digest_carrier=carrier).values_list("id", flat=True)
        )
        members = [carrier, *(row for row in rows[1:] if row.id in counted)]
        facts = digests.digest_facts(
            [row.facts for row in members],
            key=key,
            link=messages.agent_inbox_link(console_url(_section()), str(carrier.facts["agent"])),
        )
        Notification.objects.filter(id=carrier.id).update(facts=facts)
    log.info("notification.digest", channel=channel, count=len(members), key=key)
    return carrier.id


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
        id=notification_id, status=DeliveryStatus.PENDING, held=False, next_attempt_at__lte=now
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
        Notification.objects.filter(
            status=DeliveryStatus.PENDING, held=False, next_attempt_at__lte=now
        )
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


def push_endpoint_hosts() -> tuple[str, ...]:
    """The push services the enabled push channels post to (none: push is off)."""
    hosts: dict[str, None] = {}
    for channel in _section().channels:
        if isinstance(channel, PushChannel) and channel.enabled:
            hosts.update(dict.fromkeys(channel.endpoint_hosts))
    return tuple(hosts)


def push_subscription_save(*, person: Any, data: object) -> PushSubscription:
    """Keep ``person``'s browser subscription (raises PushSubscriptionRefused); a
    browser that subscribed for someone else before now belongs to ``person``."""
    hosts = push_endpoint_hosts()
    if not hosts:
        raise PushSubscriptionRefused("no push channel is configured (notifications.channels)")
    endpoint, p256dh, auth = checked_subscription(data, hosts)
    with transaction.atomic():
        subscription, _ = PushSubscription.objects.update_or_create(
            endpoint=endpoint, defaults={"person": person, "p256dh": p256dh, "auth": auth}
        )
        audit_record(
            kind="notification.push_subscribed",
            actor=Actor.person(person),
            outcome="ok",
            reason=f"web push on for a browser (push service {_host(endpoint)})",
            data={"subscription": subscription.id},
        )
    return subscription


def push_subscription_remove(*, person: Any, endpoint: str) -> int:
    """Forget ``person``'s subscription at ``endpoint``; returns how many were removed."""
    with transaction.atomic():
        removed, _ = PushSubscription.objects.filter(person=person, endpoint=endpoint).delete()
        if removed:
            audit_record(
                kind="notification.push_unsubscribed",
                actor=Actor.person(person),
                outcome="ok",
                reason=f"web push off for a browser (push service {_host(endpoint)})",
            )
    return removed


def _host(url: str) -> str:
    # The endpoint's path is the browser's capability: only its host is recorded.
    return urlsplit(url).netloc
