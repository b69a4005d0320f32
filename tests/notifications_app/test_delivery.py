"""Queueing with the event, sending to a loopback receiver, retrying, failing visibly."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.db import transaction
from django.utils import timezone

from approvals_app.models import ApprovalRequest
from approvals_app.services import approval_decide, approvals_escalate_due
from audit_app.models import AuditEvent
from audit_app.record import Actor
from notifications_app.models import Notification
from notifications_app.services import (
    notification_deliver,
    notifications_deliver_due,
    notifications_expiring_due,
)
from notifications_app.signing import SIGNATURE_HEADER, verify
from secrets_app.services import secret_set
from synthorg_site.health import health_report
from tests.notifications_app.conftest import SIGNING_KEY, webhook
from tests.notifications_app.receiver import receiver

pytestmark = pytest.mark.django_db

MARKER = "argument-value-shown-as-the-card-shows-it"
CONSOLE_SECRET = "console-secret-value-0123456789"


def rows(event: str | None = None) -> list[Notification]:
    found = Notification.objects.order_by("id")
    return list(found.filter(event=event) if event else found)


def deliver_all(now: Any = None) -> list[str]:
    return [notification_deliver(notification_id=row.id, now=now) for row in rows()]


def test_a_new_request_sends_a_signed_webhook_with_the_cards_effect_line(
    channels: Callable[..., None], pending_request: Callable[..., ApprovalRequest]
) -> None:
    with receiver("200") as hook:
        channels(webhook(hook.url), console_url="https://console.example")
        request = pending_request({"text": MARKER})
        [row] = rows("new")
        assert notification_deliver(notification_id=row.id) == "sent"
        [got] = hook.received
    assert verify(SIGNING_KEY, got.body, got.headers[SIGNATURE_HEADER], now=int(time.time()))
    body = json.loads(got.body)
    assert body["event"] == "new" and body["request_id"] == str(request.id)
    assert body["delivery"] == str(row.id) == got.headers["X-SynthOrg-Delivery"]
    assert body["link"] == f"https://console.example/approvals/{request.id}/call/"
    assert body["tool"] == "test_echo" and body["risk_tier"] == "low"
    # The card's first line, not the arguments themselves.
    assert body["effect"] == f'test_echo text="{MARKER}"'
    agent = request.invocation.agent.name
    assert body["headline"] == (
        f'{agent} → test_echo (low risk) waits for approval: test_echo text="{MARKER}"'
    )
    assert "arguments" not in body
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("sent", 1)
    # Sent once: a second attempt finds nothing to do.
    assert notification_deliver(notification_id=row.id) == "skipped"


def test_channels_hear_only_their_events_and_risk_tiers(
    channels: Callable[..., None], pending_request: Callable[..., ApprovalRequest]
) -> None:
    channels(
        webhook("http://127.0.0.1:9/none", name="critical-only", risk_tiers=["critical"]),
        webhook("http://127.0.0.1:9/none", name="decided-only", events=["decided"]),
        webhook("http://127.0.0.1:9/none", name="low-new", events=["new"], risk_tiers=["low"]),
    )
    pending_request()
    assert [(r.channel, r.event) for r in rows()] == [("low-new", "new")]


def test_a_rolled_back_event_queues_nothing(
    channels: Callable[..., None], pending_request: Callable[..., ApprovalRequest]
) -> None:
    channels(webhook("http://127.0.0.1:9/none"))

    class Undo(Exception):
        pass

    with pytest.raises(Undo), transaction.atomic():
        pending_request()
        assert len(rows()) == 1  # inside, the row exists with the event
        raise Undo
    assert rows() == []


def test_a_failing_receiver_is_retried_with_backoff_then_sent(
    channels: Callable[..., None], pending_request: Callable[..., ApprovalRequest]
) -> None:
    with receiver("500", "200") as hook:
        channels(webhook(hook.url))
        pending_request()
        [row] = rows()
        now = timezone.now()
        assert notification_deliver(notification_id=row.id, now=now) == "retry"
        row.refresh_from_db()
        assert row.attempts == 1 and "HTTP 500" in row.last_error
        assert row.next_attempt_at >= now + timedelta(seconds=10)
        # Not due yet: the sweep leaves it alone.
        assert notifications_deliver_due(now=now + timedelta(seconds=1)) == 0
        assert notifications_deliver_due(now=row.next_attempt_at) == 1
        assert len(hook.received) == 2
    row.refresh_from_db()
    assert row.status == "sent"


def test_the_last_failed_attempt_is_audited_and_shown_on_the_health_page(
    channels: Callable[..., None],
    pending_request: Callable[..., ApprovalRequest],
    settings: Any,
) -> None:
    settings.SYNTHORG_NOTIFICATION_MAX_ATTEMPTS = 2
    with receiver("503") as hook:
        channels(webhook(hook.url))
        assert health_report()["parts"]["notifications"]["ok"] is True
        pending_request()
        [row] = rows()
        assert notification_deliver(notification_id=row.id) == "retry"
        part = health_report()["parts"]["notifications"]
        assert part["ok"] is False and "retrying" in part["detail"] and "HTTP 503" in part["detail"]
        later = timezone.now() + timedelta(hours=2)
        assert notification_deliver(notification_id=row.id, now=later) == "failed"
    row.refresh_from_db()
    assert row.status == "failed"
    event = AuditEvent.objects.get(kind="notification.failed")
    assert "hook" in event.reason and "HTTP 503" in event.reason
    part = health_report()["parts"]["notifications"]
    assert part["ok"] is False and part["required"] is False
    assert "hook: 1 failed" in part["detail"]
    assert "notifications" not in health_report()["failing"]


def test_a_redirect_is_not_followed(
    channels: Callable[..., None], pending_request: Callable[..., ApprovalRequest]
) -> None:
    with receiver("200") as elsewhere, receiver(f"redirect:{elsewhere.url}") as hook:
        channels(webhook(hook.url))
        pending_request()
        assert deliver_all() == ["retry"]
        assert len(hook.received) == 1
        assert elsewhere.received == []
    assert "HTTP 302" in rows()[0].last_error


@pytest.mark.parametrize("behaviour", ["hang", "drip"])
def test_a_receiver_that_never_answers_or_never_ends_is_bounded(
    behaviour: str,
    channels: Callable[..., None],
    pending_request: Callable[..., ApprovalRequest],
    settings: Any,
) -> None:
    settings.SYNTHORG_NOTIFICATION_TIMEOUT_SECONDS = 1.0
    with receiver(behaviour) as hook:
        channels(webhook(hook.url))
        pending_request()
        outcome = deliver_all()
    # An endless body after a 200 is still a delivery: the status is all that is read.
    assert outcome == (["retry"] if behaviour == "hang" else ["sent"])
    if behaviour == "hang":
        assert "Timeout" in rows()[0].last_error


def test_a_missing_signing_key_fails_the_attempt_without_sending(
    channels: Callable[..., None],
    pending_request: Callable[..., ApprovalRequest],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with receiver("200") as hook:
        channels(webhook(hook.url))
        monkeypatch.delenv("SYNTHORG_TEST_WEBHOOK_KEY")
        pending_request()
        assert deliver_all() == ["retry"]
        assert hook.received == []
    assert "SYNTHORG_TEST_WEBHOOK_KEY" in rows()[0].last_error


def test_slack_gets_text_with_the_link_and_its_url_never_reaches_an_error(
    channels: Callable[..., None],
    pending_request: Callable[..., ApprovalRequest],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with receiver("200") as chat:
        monkeypatch.setenv("SYNTHORG_TEST_SLACK_URL", chat.url)
        channels({"name": "chat", "type": "slack", "url_env": "SYNTHORG_TEST_SLACK_URL"})
        request = pending_request()
        assert deliver_all() == ["sent"]
        text = json.loads(chat.received[0].body)["text"]
    assert request.invocation.agent.name in text and "test_echo" in text
    assert f"/approvals/{request.id}/call/|Open in the console>" in text
    # The channel is gone now: the error names the failure, never the URL (it holds a token).
    secret_url = chat.url
    Notification.objects.update(status="pending", next_attempt_at=timezone.now())
    assert deliver_all() == ["retry"]
    assert secret_url not in rows()[0].last_error and "ConnectError" in rows()[0].last_error


def test_email_goes_through_the_mail_backend(
    channels: Callable[..., None],
    pending_request: Callable[..., ApprovalRequest],
    make_person: Callable[..., Any],
) -> None:
    channels({"name": "mail", "type": "email", "to": ["ops@example.com"], "events": ["decided"]})
    request = pending_request({"text": MARKER})
    assert rows() == []
    approval_decide(
        request=request, person=make_person("operator", "olga"), decision="deny", reason="not now"
    )
    assert deliver_all() == ["sent"]
    [message] = mail.outbox
    assert message.to == ["ops@example.com"]
    assert "denied by olga" in message.subject
    assert "Reason given: not now" in message.body
    assert f"/approvals/{request.id}/call/" in message.body
    assert message.subject.endswith(f'denied by olga: test_echo text="{MARKER}"')


# Committed: a stored secret becomes known to redaction once its transaction commits.
def test_a_console_secret_in_an_argument_is_masked_as_on_the_card(
    channels: Callable[..., None],
    pending_request: Callable[..., ApprovalRequest],
    django_capture_on_commit_callbacks: Any,
) -> None:
    channels({"name": "mail", "type": "email", "to": ["ops@example.com"]})
    # What the secret's commit does (every process learns the stored values changed),
    # run here: the test's own transaction never commits, so no worker of another test
    # module that shares this Redis can take the notifications below.
    with django_capture_on_commit_callbacks(execute=True):
        secret_set(name="ops-token", value=CONSOLE_SECRET, actor=Actor.system("test"))
    pending_request({"text": f"send {CONSOLE_SECRET} out"})
    pending_request({"text": "send nothing out"})
    assert deliver_all() == ["sent", "sent"]
    attack, control = mail.outbox
    assert CONSOLE_SECRET not in f"{attack.subject}\n{attack.body}"
    assert "send [REDACTED" in attack.subject
    # Control: an argument without a secret is shown whole.
    assert control.subject.endswith('test_echo text="send nothing out"')


def test_escalation_and_expiry_are_announced_once(
    channels: Callable[..., None],
    pending_request: Callable[..., ApprovalRequest],
    approval_config: Callable[[str], None],
) -> None:
    channels(
        webhook("http://127.0.0.1:9/none", events=["escalated", "expiring"]),
        expiring_within_seconds=120,
    )
    soon, later = pending_request(), pending_request()
    ApprovalRequest.objects.filter(id=soon.id).update(
        expires_at=timezone.now() + timedelta(seconds=60)
    )
    assert notifications_expiring_due() == 1
    assert notifications_expiring_due() == 0  # a second sweep, or another node: nothing new
    assert [r.approval_id for r in rows("expiring")] == [soon.id]
    # The other request is far from expiry (positive control: it is pending too).
    assert later.status == "pending"
    escalated = approvals_escalate_due(now=timezone.now() + timedelta(days=1))
    assert escalated == 2
    assert sorted(str(r.approval_id) for r in rows("escalated")) == sorted(
        [str(soon.id), str(later.id)]
    )
