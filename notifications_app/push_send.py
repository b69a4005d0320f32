"""Sending web push: one encrypted message to each browser subscribed by a person who
decides the agent's requests (operators and admins of its team, or organisation-wide).

The payload (the headline and the one-card link) is encrypted for each browser with
its own keys (RFC 8291, by pywebpush); the push service sees only ciphertext. A
subscription the push service says is gone (404, 410) is removed; an endpoint not on
the channel's hosts is never posted to; a redirect is never followed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from email.utils import parseaddr
from typing import Any, Final

import requests
import structlog
from django.conf import settings
from pywebpush import WebPushException, webpush

from common.config.notifications import PushChannel
from common.team_scope import DECIDE
from notifications_app import messages
from notifications_app.models import PushSubscription
from notifications_app.push import endpoint_allowed, vapid_key
from trust_app.selectors.teams import agent_team_id, people_reaching

log = structlog.get_logger("synthorg.notifications")
GONE: Final = frozenset({404, 410})
# How long a push service keeps a message for a browser that is offline.
TTL_SECONDS: Final = 3600


class PushError(Exception):
    """No subscribed browser took the message; the text says why."""


def push_subscriptions_for(facts: Mapping[str, Any]) -> list[PushSubscription]:
    """The subscriptions of the people who may decide the requests ``facts`` are about."""
    team_id = agent_team_id(facts.get("agent_id"))
    if team_id is None:
        return []
    people = people_reaching(team_id, DECIDE)
    return list(PushSubscription.objects.filter(person__in=people).order_by("id"))


def _contact(channel: PushChannel) -> str:
    return channel.contact or f"mailto:{parseaddr(settings.DEFAULT_FROM_EMAIL)[1]}"


def _session() -> requests.Session:
    session = requests.Session()
    session.max_redirects = 0  # a redirect is an error, never a second destination
    session.trust_env = False  # no proxy or credentials from the environment
    return session


def send_push(channel: PushChannel, delivery_id: str, facts: Mapping[str, Any]) -> None:
    """Push the message to every subscribed browser; raise PushError when some were
    tried and none took it."""
    data = json.dumps(messages.push_payload(facts), ensure_ascii=False)
    key = vapid_key()
    failures: list[str] = []
    delivered = 0
    with _session() as session:
        for subscription in push_subscriptions_for(facts):
            if not endpoint_allowed(subscription.endpoint, channel.endpoint_hosts):
                failures.append(f"subscription {subscription.id}: endpoint not on endpoint_hosts")
                continue
            info = {
                "endpoint": subscription.endpoint,
                "keys": {"p256dh": subscription.p256dh, "auth": subscription.auth},
            }
            try:
                webpush(
                    info,
                    data=data,
                    vapid_private_key=key,
                    vapid_claims={"sub": _contact(channel)},
                    timeout=settings.SYNTHORG_NOTIFICATION_TIMEOUT_SECONDS,
                    ttl=TTL_SECONDS,
                    requests_session=session,
                )
            except WebPushException as exc:
                status = exc.response.status_code if exc.response is not None else None
                if status in GONE:
                    PushSubscription.objects.filter(id=subscription.id).delete()
                    log.info("notification.push_gone", subscription=subscription.id)
                    continue
                failures.append(f"subscription {subscription.id}: HTTP {status}")
            except requests.RequestException as exc:
                failures.append(f"subscription {subscription.id}: {exc.__class__.__name__}")
            else:
                delivered += 1
    if failures:
        log.warning("notification.push_failed", delivery=delivery_id, failures=failures[:20])
        if not delivered:
            raise PushError("; ".join(failures)[:1000])
