"""Sending one message on one channel: a signed webhook, a Slack post, an email, web
push to each person who subscribed.

Each raises ``DeliveryError`` with a sentence a person can act on; the sentence never
holds a channel's URL or key (a Slack URL holds a token).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any

import httpx
from django.conf import settings
from django.core.mail import EmailMessage

from common.config.notifications import AnyChannel, EmailChannel, SlackChannel, WebhookChannel
from notifications_app import messages
from notifications_app.signing import SIGNATURE_HEADER, sign

USER_AGENT = "SynthOrg-Console-Notifications"


class DeliveryError(Exception):
    """The channel did not take the message; the text says why."""


def _environment(name: str, what: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise DeliveryError(f"the environment variable {name} ({what}) is not set")
    return value


def _url(channel: WebhookChannel | SlackChannel) -> str:
    if channel.url is not None:
        return channel.url
    return _environment(str(channel.url_env), "the channel's URL")


def _post(url: str, body: bytes, headers: Mapping[str, str]) -> None:
    """POST and judge by the status alone; the answer's body is never read (it may not end)."""
    timeout = settings.SYNTHORG_NOTIFICATION_TIMEOUT_SECONDS
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=False) as client,
            client.stream("POST", url, content=body, headers=dict(headers)) as answer,
        ):
            status = answer.status_code
    except httpx.HTTPError as exc:
        raise DeliveryError(f"{exc.__class__.__name__}: {str(exc).replace(url, '<url>')}") from exc
    if not 200 <= status < 300:
        raise DeliveryError(f"the receiver answered HTTP {status}")


def send_webhook(channel: WebhookChannel, delivery_id: str, facts: Mapping[str, Any]) -> None:
    key = _environment(channel.secret_env, "the signing key")
    body = json.dumps(messages.webhook_payload(delivery_id, facts), sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-SynthOrg-Event": str(facts["event"]),
        "X-SynthOrg-Delivery": delivery_id,
        SIGNATURE_HEADER: sign(key, body, int(time.time())),
    }
    _post(_url(channel), body, headers)


def send_slack(channel: SlackChannel, delivery_id: str, facts: Mapping[str, Any]) -> None:
    body = json.dumps(messages.slack_payload(facts, interactive=channel.interactive)).encode()
    _post(_url(channel), body, {"Content-Type": "application/json", "User-Agent": USER_AGENT})


def send_email(channel: EmailChannel, delivery_id: str, facts: Mapping[str, Any]) -> None:
    message = EmailMessage(
        subject=messages.email_subject(facts),
        body=messages.text_body(facts),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=list(channel.to),
        headers={"X-SynthOrg-Delivery": delivery_id},
    )
    try:
        message.send(fail_silently=False)
    except Exception as exc:  # every mail backend raises its own kinds
        raise DeliveryError(f"the mail backend refused: {exc.__class__.__name__}: {exc}") from exc


def send(channel: AnyChannel, delivery_id: str, facts: Mapping[str, Any]) -> None:
    if isinstance(channel, WebhookChannel):
        send_webhook(channel, delivery_id, facts)
    elif isinstance(channel, SlackChannel):
        send_slack(channel, delivery_id, facts)
    elif isinstance(channel, EmailChannel):
        send_email(channel, delivery_id, facts)
    else:
        # pywebpush brings aiohttp and cryptography's JOSE: most of a second of CPU to
        # import, paid by the process that sends a push rather than by every one at start.
        from notifications_app.push_send import PushError, send_push

        try:
            send_push(channel, delivery_id, facts)
        except PushError as exc:
            raise DeliveryError(str(exc)) from exc
