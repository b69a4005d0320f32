"""A flood is told in a handful of emails, every request counted; the headline of each
message is safe, through a real SMTP server of the test's own."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from approvals_app.models import ApprovalRequest
from approvals_app.services import approval_decide
from common.testing import wait_until
from notifications_app.models import Notification
from notifications_app.services import notification_deliver, notifications_digests_flush
from notifications_app.tasks import sweep_notifications
from tests.notifications_app.smtp import SmtpInbox, smtp_inbox

pytestmark = pytest.mark.django_db

OPS = "ops@example.com"
FLOOD = 60
COUNT_RE = re.compile(r": (\d+) requests wait for approval \(test_echo ×(\d+)\)")


def mail_channel(**extra: Any) -> dict[str, Any]:
    return {"name": "mail", "type": "email", "to": [OPS], "events": ["new"], **extra}


def deliver_due(now: Any = None) -> list[str]:
    rows = Notification.objects.filter(status="pending", held=False).order_by("id")
    return [notification_deliver(notification_id=r.id, now=now) for r in rows]


def subject_of(got: Any) -> str:
    return str(got.message["Subject"]).strip()


def requests_told(inbox: SmtpInbox, agent: str) -> int:
    """How many requests of ``agent`` the messages received tell of, digests counted."""
    told = 0
    for got in inbox.messages():
        subject = subject_of(got)
        if agent not in subject:
            continue
        counted = COUNT_RE.search(subject)
        told += int(counted.group(1)) if counted else 1
    return told


def flood(
    submit: Callable[..., Any], agent: Any, count: int, text: str = "hi"
) -> list[ApprovalRequest]:
    calls = [submit(agent, arguments={"text": f"{text}-{i}"}) for i in range(count)]
    return list(ApprovalRequest.objects.filter(invocation__in=calls))


def test_a_flood_from_one_agent_is_a_handful_of_emails_each_request_counted(
    channels: Callable[..., None],
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
    settings: Any,
) -> None:
    with smtp_inbox(settings) as inbox:
        channels(mail_channel(), digest_window_seconds=60)
        agent, other = make_agent_row(), make_agent_row()
        assert len(flood(submit, agent, FLOOD)) == FLOOD
        flood(submit, other, 1)
        assert Notification.objects.count() == FLOOD + 1  # every request has its row
        # The first of the burst, and the other agent's one request, go out at once.
        assert deliver_due() == ["sent", "sent"]
        assert len(inbox.messages()) == 2
        # Nothing more until the window closes.
        assert notifications_digests_flush() == 0
        later = timezone.now() + timedelta(seconds=61)
        assert notifications_digests_flush(now=later) == 1
        assert notifications_digests_flush(now=later) == 0  # taken once
        assert deliver_due(now=later) == ["sent"]
        got = inbox.messages()
    assert len(got) == 3
    assert requests_told(inbox, agent.name) == FLOOD
    assert requests_told(inbox, other.name) == 1
    digest = next(g for g in got if "requests wait" in subject_of(g))
    subject = subject_of(digest)
    assert subject == (
        f"[SynthOrg] {agent.name}: {FLOOD - 1} requests wait for approval "
        f"(test_echo ×{FLOOD - 1}), low risk"
    )
    body = digest.message.get_content()
    assert f"/approvals/?agent={agent.name}" in body
    assert digest.recipients == [OPS]
    counted = Notification.objects.filter(status="digested")
    assert (
        counted.count() == FLOOD - 2 and Notification.objects.filter(status="pending").count() == 0
    )
    assert Notification.objects.filter(digest_carrier=None, status="sent").count() == 3


def test_a_flood_and_its_bulk_denial_are_four_emails_not_one_per_event(
    channels: Callable[..., None],
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
    make_person: Callable[..., Any],
    settings: Any,
) -> None:
    """The issue's flood: each request was one email when it came and one when it was
    settled (about 880 for 440 calls); now each burst is one email and one digest."""
    with smtp_inbox(settings) as inbox:
        channels(mail_channel(events=["new", "decided"]), digest_window_seconds=60)
        olga = make_person("operator", "olga")
        requests = flood(submit, make_agent_row(), FLOOD)
        for request in requests:
            approval_decide(request=request, person=olga, decision="deny", reason="flood")
        assert Notification.objects.count() == 2 * FLOOD  # every event has its row
        deliver_due()
        later = timezone.now() + timedelta(seconds=61)
        assert notifications_digests_flush(now=later) == 2
        deliver_due(now=later)
        subjects = sorted(subject_of(got) for got in inbox.messages())
    assert len(subjects) == 4, subjects
    settled = [s for s in subjects if "settled" in s or "was denied" in s]
    assert len(settled) == 2
    expected = (
        f"{FLOOD - 1} requests were settled (test_echo ×{FLOOD - 1}), denied ×{FLOOD - 1}, low risk"
    )
    assert any(s.endswith(expected) for s in settled), settled


def test_control_without_a_window_every_request_is_its_own_email(
    channels: Callable[..., None],
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
    settings: Any,
) -> None:
    with smtp_inbox(settings) as inbox:
        channels(mail_channel(), digest_window_seconds=0)
        flood(submit, make_agent_row(), 5)
        assert deliver_due() == ["sent"] * 5
        assert notifications_digests_flush(now=timezone.now() + timedelta(hours=1)) == 0
    assert len(inbox.messages()) == 5


def test_a_header_injection_in_an_argument_stays_in_the_subject_line(
    channels: Callable[..., None],
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
    settings: Any,
) -> None:
    hostile = "x\r\nBcc: victim@example.com\r\nX-Injected: yes\r\n\r\nforged body \u202egnp.exe"
    with smtp_inbox(settings) as inbox:
        channels(mail_channel(), digest_window_seconds=0)
        submit(make_agent_row(), arguments={"text": hostile})
        submit(make_agent_row(), arguments={"text": "quarterly notes"})
        assert deliver_due() == ["sent", "sent"]
        attack, control = inbox.messages()
    # One recipient, no header the argument tried to add, the argument on one line.
    assert attack.recipients == [OPS] and control.recipients == [OPS]
    assert attack.message["Bcc"] is None and attack.message["X-Injected"] is None
    header_lines = attack.raw.replace(b"\r\n", b"\n").split(b"\n\n", 1)[0].split(b"\n")
    assert not [h for h in header_lines if h.lower().startswith((b"bcc:", b"x-injected:"))]
    assert attack.message["X-SynthOrg-Delivery"]  # control: the console's own header is there
    subject = subject_of(attack)
    # As the card writes it: JSON's escapes, their backslashes doubled beside \u202e.
    assert 'text="x\\\\r\\\\nBcc: victim@example.com\\\\r\\\\nX-Injected: yes' in subject
    assert "\r" not in subject and "\n" not in subject
    assert "\\u202egnp.exe" in subject and "\u202e" not in subject
    # In the body too the argument stays inside its own lines.
    lines = [line for line in attack.message.get_content().splitlines() if "forged body" in line]
    assert lines and all("\\\\r\\\\n\\\\r\\\\nforged body" in line for line in lines)
    # Control: an ordinary argument is shown as it is.
    assert subject_of(control).endswith(': test_echo text="quarterly notes"')
    assert "low risk" in subject and "test_echo" in subject


def test_a_long_argument_keeps_its_end_in_the_subject(
    channels: Callable[..., None],
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
    settings: Any,
) -> None:
    with smtp_inbox(settings) as inbox:
        channels(mail_channel(), digest_window_seconds=0)
        submit(make_agent_row(), arguments={"text": "a" * 3000 + "END-OF-ARGUMENT"})
        assert deliver_due() == ["sent"]
        [got] = inbox.messages()
    subject = subject_of(got)
    assert subject.endswith('END-OF-ARGUMENT"') and "characters] …" in subject
    assert len(subject) < 300


def test_the_sweep_sends_the_digest_once_the_window_closes(
    channels: Callable[..., None],
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
    settings: Any,
) -> None:
    with smtp_inbox(settings) as inbox:
        channels(mail_channel(), digest_window_seconds=1)
        agent = make_agent_row()
        flood(submit, agent, 4)
        assert deliver_due() == ["sent"]
        assert sweep_notifications() == 0  # the window is still open: nothing more
        wait_until(
            lambda: sweep_notifications() == 1, timeout=30, what="the sweep to send the digest"
        )
        assert sweep_notifications() == 0
        subjects = [subject_of(got) for got in inbox.messages()]
    assert len(subjects) == 2
    assert subjects[1] == (
        f"[SynthOrg] {agent.name}: 3 requests wait for approval (test_echo ×3), low risk"
    )
