"""send_email and slack_post end to end: a daphne and a worker whose config has a
``communication`` section.

The mail server is the test's own SMTP server on loopback (aiosmtpd), which the
worker reaches through Django's mail backend (``EMAIL_URL``); Slack's Web API is the
test's own loopback server, which answers like Slack only to the real bot token.
Every refusal has its control beside it: the same agent doing the allowed thing.
"""

from __future__ import annotations

import email
import email.policy
import json
import secrets
import threading
import uuid
from collections.abc import Callable, Iterator
from email.message import EmailMessage
from typing import Any

import httpx
import pytest
from aiosmtpd.controller import Controller
from django.test import Client

from audit_app.models import AuditEvent
from audit_app.record import Actor
from common.testing import free_port, wait_until
from secrets_app.services import secret_set
from tests.support.pipeline import Pipeline, configured_pipeline
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.net.servers import LoopbackHttpServer, RecordedRequest, Reply
from trust_app.models import AgentPermissions
from trust_app.services.agents import person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
ADMIN = Actor.system("test admin")
REDIS_DB = 2
SENDER = "agents@example.com"
SLACK_SECRET = "SLACK_BOT_TOKEN"
# The token Slack accepts: the stored secret of the test being run.
ACCEPTED: dict[str, str] = {}


class Inbox:
    """What the SMTP server received: one parsed message and its envelope per DATA."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.messages: list[tuple[EmailMessage, list[str]]] = []
        self._lock = threading.Lock()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        # SMTP carries lines ending in CRLF; a mail reader shows them as plain lines.
        content = envelope.content.replace(b"\r\n", b"\n")
        parsed = email.message_from_bytes(content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        with self._lock:
            self.messages.append((parsed, list(envelope.rcpt_tos)))
        return "250 Message accepted for delivery"

    def count(self) -> int:
        with self._lock:
            return len(self.messages)


@pytest.fixture(scope="module")
def inbox() -> Iterator[Inbox]:
    handler = Inbox(free_port())
    controller = Controller(handler, hostname="127.0.0.1", port=handler.port)
    controller.start()
    try:
        yield handler
    finally:
        controller.stop()


def _slack_answer(request: RecordedRequest) -> Reply:
    """Slack's chat.postMessage: ok only with the bot token, echoing the token when not."""
    sent = (request.header_values("Authorization") or [""])[0]
    if not ACCEPTED.get("value") or sent != f"Bearer {ACCEPTED['value']}":
        answer = {"ok": False, "error": "invalid_auth", "you sent": sent}
    else:
        posted = json.loads(request.body)
        answer = {"ok": True, "channel": "C0DEPLOYS1", "ts": "1700000000.000100",
                  "message": {"text": posted["text"]}, "you sent": sent}  # fmt: skip
    return Reply(200, {"Content-Type": "application/json"}, json.dumps(answer).encode())


@pytest.fixture(scope="module")
def slack() -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer("127.0.0.1") as server:
        server.route("/api/chat.postMessage", _slack_answer)
        yield server


@pytest.fixture(scope="module")
def pipeline(
    test_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
    inbox: Inbox,
    slack: LoopbackHttpServer,
) -> Iterator[Pipeline]:
    config = {
        "connections": [
            {
                "name": "slack",
                "base_url": slack.url("/api"),
                "auth": {"secret": SLACK_SECRET, "scheme": "bearer"},
                "private_network": True,
                "operations": [{"method": "POST", "path": "/chat.postMessage"}],
            }
        ],
        "communication": {
            "email": {
                "sender": SENDER,
                "internal_domains": ["example.com"],
                "allowed_domains": ["example.org"],
                "max_recipients": 3,
            },
            "slack": {"connection": "slack", "channels": ["deploys", "general"]},
        },
    }
    root = tmp_path_factory.mktemp("communication")
    env = dict(test_env, EMAIL_URL=f"smtp://127.0.0.1:{inbox.port}")
    with configured_pipeline(env, root, config, redis_db=REDIS_DB) as started:
        yield started


@pytest.fixture(scope="module")
def daphne_server(pipeline: Pipeline) -> str:
    return pipeline.url


@pytest.fixture(autouse=True)
def _settled(pipeline: Pipeline) -> Iterator[None]:
    yield
    pipeline.settle()


@pytest.fixture
def token() -> str:
    value = f"xoxb-{secrets.token_urlsafe(30)}"
    secret_set(name=SLACK_SECRET, value=value, actor=ADMIN)
    ACCEPTED["value"] = value
    return value


def _agent(make_agent: Callable[..., AgentClient], **grants: list[str]) -> AgentClient:
    client = make_agent("standard", autonomy="full")
    AgentPermissions.objects.create(agent=client.agent, sub_constraints=grants)
    return client


def _call(client: AgentClient, tool: str, **arguments: Any) -> dict[str, Any]:
    response = client.call(tool, arguments, idempotency_key=uuid.uuid4().hex, wait=20)
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    for _ in range(3):  # bounded: the call's own limit is far below this
        if answer["status"] not in ("queued", "running"):
            break
        answer = client.get(answer["id"], wait=20).json()
    return answer


def _denied(client: AgentClient, tool: str, **arguments: Any) -> dict[str, Any]:
    """A call refused when decided: recorded as denied, never queued."""
    answer = _call(client, tool, **arguments)
    assert answer["status"] == "denied" and answer["queue"] is None, answer
    return {**answer["error"], "rule": answer["decision"]["rule"]}


def _email(client: AgentClient, to: Any, subject: str = "Build", body: str = "Green.") -> Any:
    return _call(client, "send_email", to=to, subject=subject, body=body)


def _last(inbox: Inbox) -> tuple[EmailMessage, list[str]]:
    wait_until(lambda: inbox.count() > 0, timeout=30, what="a message at the SMTP server")
    return inbox.messages[-1]


def test_an_internal_message_is_sent_at_once_exactly_as_written(
    make_agent: Callable[..., AgentClient], inbox: Inbox
) -> None:
    client = _agent(make_agent, email_recipients=["example.com"])
    before = inbox.count()
    body = "The nightly build is green.\n\nÜbersicht: 412 tests, 0 failures.\n"
    done = _email(client, ["ana@example.com", "Bo@Example.com"], "Nightly: green ✓", body)

    assert done["status"] == "succeeded", done
    assert done["result"]["structured"]["action_type"] == "comms:internal"
    assert inbox.count() == before + 1
    message, envelope = inbox.messages[-1]
    assert envelope == ["ana@example.com", "Bo@example.com"]
    assert message["From"] == SENDER
    assert message["To"] == "ana@example.com, Bo@example.com"
    assert message["Subject"] == "Nightly: green ✓"
    assert message.get_content() == body
    assert message["Message-ID"] == done["result"]["structured"]["message_id"]
    row = AuditEvent.objects.get(kind="communication.email", invocation_id=done["id"])
    assert row.action_type == "comms:internal" and row.outcome == "sent"
    assert row.data["recipients"] == ["ana@example.com", "Bo@example.com"]


def test_an_external_message_asks_a_person_and_is_sent_after_approval(
    make_agent: Callable[..., AgentClient], inbox: Inbox, daphne_server: str
) -> None:
    client = _agent(make_agent, email_recipients=["example.com", "carla@example.org"])
    operator = person_create(username=f"op-{uuid.uuid4().hex[:6]}", role="operator", password=None)
    browser = Client()
    browser.force_login(operator)
    before = inbox.count()
    body = "Hello Carla,\n\nthe report you asked for is attached to ticket 42.\n"

    pending = _email(client, ["carla@example.org", "ana@example.com"], "Your report", body)
    assert pending["status"] == "pending_approval", pending
    assert "comms:external" in pending["decision"]["reason"], pending
    assert "carla@example.org outside the internal domains" in pending["decision"]["reason"]
    assert inbox.count() == before

    # The card shows the message as Carla will read it: To, Subject and the body whole.
    page = browser.get("/approvals/").content.decode()
    assert "carla@example.org, ana@example.com" in page, page[-3000:]
    assert "Your report" in page
    assert "the report you asked for is attached to ticket 42." in page

    decided = httpx.post(
        f"{daphne_server}/api/v1/approvals/{pending['approval']['id']}/decide/",
        json={"decision": "approve", "reason": "checked"},
        headers={"Authorization": f"Bearer {person_token_issue(person=operator)}"},
        timeout=60,
    )
    assert decided.status_code == 200, decided.text
    done = client.get(pending["id"], wait=20).json()
    for _ in range(3):
        if done["status"] == "succeeded":
            break
        done = client.get(pending["id"], wait=20).json()
    assert done["status"] == "succeeded", done
    message, envelope = _last(inbox)
    assert inbox.count() == before + 1
    assert envelope == ["carla@example.org", "ana@example.com"]
    assert message.get_content() == body
    row = AuditEvent.objects.get(kind="communication.email", invocation_id=done["id"])
    assert row.action_type == "comms:external" and row.data["external"] == ["carla@example.org"]

    # Control: the same agent writing only inside the organisation asks nobody.
    internal = _email(client, "ana@example.com")
    assert internal["status"] == "succeeded", internal


def test_a_recipient_outside_the_allowlists_is_refused_and_nothing_is_sent(
    make_agent: Callable[..., AgentClient], inbox: Inbox
) -> None:
    client = _agent(make_agent, email_recipients=["ana@example.com", "example.org"])
    before = inbox.count()
    # A domain the organisation does not send to at all.
    error = _denied(client, "send_email", to=["ana@example.com", "eve@example.net"],
                    subject="Build", body="Green.")  # fmt: skip
    assert "domain example.net is not one the organisation sends to" in error["message"], error
    assert error["rule"] == "communication_recipient"
    # An internal address the agent is not granted.
    error = _denied(client, "send_email", to="bo@example.com", subject="Build", body="Green.")
    assert "recipient bo@example.com is not granted to this agent" in error["message"], error
    # Over the recipient limit (3).
    many = [f"u{i}@example.org" for i in range(4)]
    error = _denied(client, "send_email", to=many, subject="Build", body="Green.")
    assert "at most 3 per message" in error["message"], error
    assert inbox.count() == before

    # Control: the granted address, and anyone at the granted domain, are sent to.
    assert _email(client, "ana@example.com")["status"] == "succeeded"
    assert inbox.count() == before + 1
    assert inbox.messages[-1][1] == ["ana@example.com"]


def test_header_injection_is_refused_and_nothing_is_sent(
    make_agent: Callable[..., AgentClient], inbox: Inbox
) -> None:
    client = _agent(make_agent, email_recipients=["example.com"])
    before = inbox.count()
    attempts: list[dict[str, Any]] = [
        {"to": "ana@example.com", "subject": "Hi\r\nBcc: eve@example.net"},
        {"to": "ana@example.com", "subject": "Hi\nBcc: eve@example.net"},
        {"to": "ana@example.com", "subject": "Hi\u2028Bcc: eve@example.net"},
        {"to": "ana@example.com\r\nBcc: eve@example.net", "subject": "Hi"},
        {"to": ["ana@example.com, eve@example.net"], "subject": "Hi"},
        {"to": ["Eve <eve@example.net> ana@example.com"], "subject": "Hi"},
    ]
    for attempt in attempts:
        error = _denied(client, "send_email", body="x", **attempt)
        assert error["rule"] == "communication_message", (attempt, error)
    assert inbox.count() == before

    # Control: the same message on one line goes, with no header it did not ask for.
    done = _email(client, "ana@example.com", "Hi Bcc: eve@example.net", "x")
    assert done["status"] == "succeeded", done
    message, envelope = _last(inbox)
    assert envelope == ["ana@example.com"] and message["Bcc"] is None
    assert message["Subject"] == "Hi Bcc: eve@example.net"


def test_slack_post_sends_the_token_and_the_agent_never_sees_it(
    make_agent: Callable[..., AgentClient], slack: LoopbackHttpServer, token: str
) -> None:
    client = _agent(make_agent, slack_channels=["deploys"])
    done = _call(client, "slack_post", channel="#deploys", text="v2.4.1 is *live*")

    assert done["status"] == "succeeded", done
    assert done["result"]["structured"] == {
        "ok": True, "channel": "C0DEPLOYS1", "ts": "1700000000.000100",
    }  # fmt: skip
    request = slack.requests[-1]
    assert request.method == "POST" and request.path == "/api/chat.postMessage"
    assert request.header_values("Authorization") == [f"Bearer {token}"]
    assert json.loads(request.body) == {"channel": "#deploys", "text": "v2.4.1 is *live*"}
    assert token not in json.dumps(done)
    audit = json.dumps(list(AuditEvent.objects.values("reason", "data")), default=str)
    assert token not in audit
    assert AuditEvent.objects.filter(
        kind="communication.slack", invocation_id=done["id"], outcome="sent"
    ).exists()


def test_slack_post_to_a_channel_not_allowed_is_refused(
    make_agent: Callable[..., AgentClient], slack: LoopbackHttpServer, token: str
) -> None:
    client = _agent(make_agent, slack_channels=["deploys", "random"])
    before = len(slack.requests)
    # Granted to the agent but not in the organisation's list, and the reverse.
    for channel in ("#random", "#general", "C0OTHER123"):
        error = _denied(client, "slack_post", channel=channel, text="hello")
        assert "is not one this agent may post to (allowed: deploys)" in error["message"], error
        assert error["rule"] == "communication_recipient"
    assert len(slack.requests) == before

    # Control: the channel in both lists is posted to.
    assert _call(client, "slack_post", channel="deploys", text="hello")["status"] == "succeeded"
    assert len(slack.requests) == before + 1
