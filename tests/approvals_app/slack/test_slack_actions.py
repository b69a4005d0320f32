"""Approvals from Slack's buttons, with a loopback server of the test's own playing
Slack: it receives the channel's message (the buttons), and Slack's ``response_url``
where the console updates the message. Clicks are signed the way Slack signs them.
Every attack (unsigned, signed with another secret, stale, replayed, a user linked to
no one, the agent's owner, another call's hash, a response URL elsewhere) has its
control: the same click done right decides."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml
from django.test import Client

from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent
from common.config.notifications import SlackChannel
from common.settings_config import synthorg_config
from notifications_app.models import Notification
from notifications_app.senders import send_slack
from notifications_app.slack import slack_signature
from tests.tools_app.net.servers import LoopbackHttpServer
from tools_app.models import Invocation

pytestmark = pytest.mark.django_db(transaction=True)
SECRET_ENV = "SYNTHORG_TEST_SLACK_SIGNING_SECRET"
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
ACTIONS = "/integrations/slack/ops-slack/actions/"


@pytest.fixture(autouse=True)
def _worker(celery_worker_process: Any) -> Any:
    """A worker runs beside, as in production: it runs approved calls and takes the
    notification rows it is sent (its config has no channel of this module's)."""
    return celery_worker_process


@pytest.fixture
def slack(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer() as server:
        server.route("/webhook", lambda _request: _ok())
        server.route("/respond", lambda _request: _ok())
        monkeypatch.setenv(SECRET_ENV, SECRET)
        yield server


def _ok() -> Any:
    from tests.tools_app.net.servers import Reply

    return Reply(200, body=b"ok")


@pytest.fixture
def people(make_person: Callable[..., Any]) -> dict[str, Any]:
    return {
        "alice": make_person("operator", f"alice-{uuid.uuid4().hex[:6]}"),
        "bob": make_person("operator", f"bob-{uuid.uuid4().hex[:6]}"),
    }


@pytest.fixture
def channel(
    slack: LoopbackHttpServer, people: dict[str, Any], approval_config: Callable[[str], None]
) -> LoopbackHttpServer:
    approval_config(
        yaml.safe_dump(
            {
                "notifications": {
                    "channels": [
                        {
                            "name": "ops-slack",
                            "type": "slack",
                            "url": slack.url("/webhook"),
                            "interactive": True,
                            "signing_secret_env": SECRET_ENV,
                            "users": {
                                "U0ALICE": people["alice"].username,
                                "U0BOB": people["bob"].username,
                            },
                            "response_hosts": [f"127.0.0.1:{slack.port}"],
                        }
                    ]
                }
            }
        )
    )
    return slack


def _waiting(
    make_agent_row: Callable[..., Any], submit: Callable[..., Any], owner: Any = None
) -> ApprovalRequest:
    """A call that waits for a person; its message is delivered to the channel."""
    invocation = submit(make_agent_row(autonomy="locked", owner=owner))
    request = ApprovalRequest.objects.get(invocation=invocation)
    row = Notification.objects.get(approval_id=request.id, channel="ops-slack", event="new")
    # Sent here with the channel's own sender: a worker of the suite may hold the row's
    # lease, and its config has no channel of this test's.
    channel = synthorg_config().notifications.channel("ops-slack")
    assert isinstance(channel, SlackChannel)
    send_slack(channel, str(row.id), row.facts)
    return request


def _message(server: LoopbackHttpServer, request: ApprovalRequest) -> dict[str, Any]:
    for recorded in reversed(server.requests):
        if recorded.path == "/webhook":
            body: dict[str, Any] = json.loads(recorded.body)
            if str(request.id) in json.dumps(body):
                return body
    raise AssertionError("the channel received no message for this request")


def _click_body(value: str, user: str, action: str, response_url: str) -> bytes:
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower()},
        "actions": [{"action_id": action, "value": value, "type": "button"}],
        "response_url": response_url,
        "team": {"id": "T0TEAM"},
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def _post(body: bytes, *, secret: str = SECRET, timestamp: int | None = None,
          signature: str | None = None) -> Any:  # fmt: skip
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signed = slack_signature(secret, stamp, body) if signature is None else signature
    return Client().post(
        ACTIONS,
        data=body,
        content_type="application/x-www-form-urlencoded",
        HTTP_X_SLACK_REQUEST_TIMESTAMP=stamp,
        HTTP_X_SLACK_SIGNATURE=signed,
    )


def _button(message: dict[str, Any], action: str) -> str:
    elements = message["blocks"][1]["elements"]
    return str(next(e for e in elements if e["action_id"] == action)["value"])


def _responses(server: LoopbackHttpServer) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in server.requests if r.path == "/respond"]


def test_a_linked_operator_approves_from_the_message_and_it_updates_in_place(
    channel: LoopbackHttpServer, people: dict[str, Any],
    make_agent_row: Callable[..., Any], submit: Callable[..., Any],
) -> None:  # fmt: skip
    request = _waiting(make_agent_row, submit)
    message = _message(channel, request)
    value = _button(message, "synthorg.approve")
    assert value == f"{request.id}:{request.arguments_hash}"
    assert "Deny" in json.dumps(message["blocks"]) and message["text"]

    answer = _post(_click_body(value, "U0ALICE", "synthorg.approve", channel.url("/respond")))
    assert answer.status_code == 200 and answer.json()["ok"], answer.content
    request.refresh_from_db()
    assert request.status == "approved" and request.decided_by == people["alice"].username
    # Queued to run (a worker of the suite may already have run it).
    status = Invocation.objects.get(id=request.invocation_id).status
    assert status in ("queued", "running", "succeeded"), status
    update = _responses(channel)[-1]
    assert update["replace_original"] is True
    assert f"Approved by {people['alice'].username} (in Slack)" in update["text"]
    assert AuditEvent.objects.filter(
        kind="approval.approved", actor_name=people["alice"].username
    ).exists()


def test_a_deny_click_denies_with_its_reason(
    channel: LoopbackHttpServer, make_agent_row: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    request = _waiting(make_agent_row, submit)
    value = _button(_message(channel, request), "synthorg.deny")
    assert _post(_click_body(value, "U0BOB", "synthorg.deny", channel.url("/respond"))).json()["ok"]
    request.refresh_from_db()
    assert request.status == "denied"
    assert request.decisions.get().reason == "denied in Slack"


@pytest.mark.parametrize(
    "forgery", ["unsigned", "other_secret", "stale", "future", "body_changed", "not_v0"]
)
def test_a_click_slack_did_not_sign_decides_nothing(
    channel: LoopbackHttpServer, make_agent_row: Callable[..., Any], submit: Callable[..., Any],
    forgery: str,
) -> None:  # fmt: skip
    request = _waiting(make_agent_row, submit)
    value = _button(_message(channel, request), "synthorg.approve")
    body = _click_body(value, "U0ALICE", "synthorg.approve", channel.url("/respond"))
    now = int(time.time())
    answer = {
        "unsigned": lambda: _post(body, signature=""),
        "other_secret": lambda: _post(body, secret="not-the-signing-secret"),
        "stale": lambda: _post(body, timestamp=now - 400),
        "future": lambda: _post(body, timestamp=now + 400),
        "body_changed": lambda: _post(
            body, signature=slack_signature(SECRET, str(now), body + b"&x=1"), timestamp=now
        ),
        "not_v0": lambda: _post(
            body,
            signature=slack_signature(SECRET, str(now), body).replace("v0=", "v1="),
            timestamp=now,
        ),
    }[forgery]()
    assert answer.status_code == 401, answer.content
    request.refresh_from_db()
    assert request.status == "pending"
    assert AuditEvent.objects.filter(kind="request.refused", reason__startswith="slack:").exists()
    # Control: the same click, signed now, decides.
    assert _post(body).json()["ok"]
    request.refresh_from_db()
    assert request.status == "approved"


def test_a_replayed_click_is_refused(
    channel: LoopbackHttpServer, make_agent_row: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    first = _waiting(make_agent_row, submit)
    value = _button(_message(channel, first), "synthorg.deny")
    body = _click_body(value, "U0ALICE", "synthorg.deny", channel.url("/respond"))
    stamp = int(time.time())
    assert _post(body, timestamp=stamp).status_code == 200  # control: the first time
    assert _post(body, timestamp=stamp).status_code == 401  # the very same request again


def test_people_not_linked_and_the_agents_owner_decide_nothing(
    channel: LoopbackHttpServer, people: dict[str, Any],
    make_agent_row: Callable[..., Any], submit: Callable[..., Any],
) -> None:  # fmt: skip
    request = _waiting(make_agent_row, submit, owner=people["bob"])
    value = _button(_message(channel, request), "synthorg.approve")
    stranger = _post(_click_body(value, "U0NOBODY", "synthorg.approve", channel.url("/respond")))
    assert stranger.status_code == 200 and not stranger.json()["ok"]
    note = _responses(channel)[-1]
    assert note["response_type"] == "ephemeral" and "not linked" in note["text"]
    owner = _post(_click_body(value, "U0BOB", "synthorg.approve", channel.url("/respond")))
    assert not owner.json()["ok"], owner.content
    assert _responses(channel)[-1]["response_type"] == "ephemeral"
    request.refresh_from_db()
    assert request.status == "pending"
    # Control: another linked operator approves it.
    assert _post(_click_body(value, "U0ALICE", "synthorg.approve", channel.url("/respond"))).json()[
        "ok"
    ]


def test_a_button_for_other_arguments_decides_nothing(
    channel: LoopbackHttpServer, make_agent_row: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    request = _waiting(make_agent_row, submit)
    forged = f"{request.id}:{'0' * 64}"
    answer = _post(_click_body(forged, "U0ALICE", "synthorg.approve", channel.url("/respond")))
    assert not answer.json()["ok"]
    request.refresh_from_db()
    assert request.status == "pending"


def test_the_update_goes_only_to_the_channels_response_hosts(
    channel: LoopbackHttpServer, make_agent_row: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    request = _waiting(make_agent_row, submit)
    value = _button(_message(channel, request), "synthorg.approve")
    with LoopbackHttpServer() as elsewhere:
        elsewhere.route("/respond", lambda _request: _ok())
        answer = _post(_click_body(value, "U0ALICE", "synthorg.approve", elsewhere.url("/respond")))
        assert answer.json()["ok"]  # decided: the click was Slack's
        assert elsewhere.count() == 0  # but nothing was sent to a host not listed
    before = len(_responses(channel))
    second = _waiting(make_agent_row, submit)
    value = _button(_message(channel, second), "synthorg.approve")
    assert _post(_click_body(value, "U0ALICE", "synthorg.approve", channel.url("/respond"))).json()[
        "ok"
    ]
    assert len(_responses(channel)) == before + 1  # control: the listed host gets it


def test_the_messages_link_survives_sign_in_and_says_who_was_quicker(
    channel: LoopbackHttpServer, people: dict[str, Any],
    make_agent_row: Callable[..., Any], submit: Callable[..., Any],
) -> None:  # fmt: skip
    from tests.approvals_app.conftest import PASSWORD

    request = _waiting(make_agent_row, submit)
    link = _message(channel, request)["text"].split("<", 1)[1].split("|", 1)[0]
    path = link.split("://", 1)[1].split("/", 1)[1]
    assert f"/{path}" == f"/approvals/{request.id}/call/"
    browser = Client()
    to_sign_in = browser.get(f"/{path}")
    assert to_sign_in.status_code == 302
    assert to_sign_in["Location"] == f"/accounts/login/?next=/approvals/{request.id}/call/"
    signed_in = browser.post(
        "/accounts/login/",
        {"username": people["bob"].username, "password": PASSWORD, "next": f"/{path}"},
    )
    assert signed_in["Location"] == f"/{path}"
    page = browser.get(f"/{path}").content.decode()
    assert "decide it in the inbox" in page and "Already" not in page  # control: still open
    value = _button(_message(channel, request), "synthorg.approve")
    assert _post(_click_body(value, "U0ALICE", "synthorg.approve", channel.url("/respond"))).json()[
        "ok"
    ]
    late = browser.get(f"/{path}").content.decode()
    assert f"Already approved by {people['alice'].username}" in late
    assert "decide it in the inbox" not in late


def test_a_slack_user_decides_only_their_persons_teams_requests(
    slack: LoopbackHttpServer, approval_config: Callable[[str], None], submit: Callable[..., Any]
) -> None:
    from trust_app.services.agents import agent_create, person_create
    from trust_app.services.teams import team_create

    team_create(name="team-a")
    team_create(name="team-b")
    carol = person_create(username=f"carol-{uuid.uuid4().hex[:6]}", role="operator",
                          password=None, team="team-a")  # fmt: skip
    approval_config(yaml.safe_dump({"notifications": {"channels": [{
        "name": "ops-slack", "type": "slack", "url": slack.url("/webhook"), "interactive": True,
        "signing_secret_env": SECRET_ENV, "users": {"U0CAROL": carol.username},
        "response_hosts": [f"127.0.0.1:{slack.port}"],
    }]}}))  # fmt: skip

    def waiting(team: str) -> ApprovalRequest:
        agent = agent_create(name=f"{team}-{uuid.uuid4().hex[:6]}", access_level="standard",
                             autonomy="locked", team=team).agent  # fmt: skip
        return ApprovalRequest.objects.get(invocation=submit(agent))

    other, own = waiting("team-b"), waiting("team-a")
    for request in (other, own):
        row = Notification.objects.get(approval_id=request.id, channel="ops-slack", event="new")
        channel = synthorg_config().notifications.channel("ops-slack")
        assert isinstance(channel, SlackChannel)
        send_slack(channel, str(row.id), row.facts)

    value = _button(_message(slack, other), "synthorg.deny")
    refused = _post(_click_body(value, "U0CAROL", "synthorg.deny", slack.url("/respond")))
    assert refused.status_code == 200 and not refused.json()["ok"], refused.content
    assert "among your teams" in refused.json()["text"]
    other.refresh_from_db()
    assert other.status == "pending"
    # Control: the same person's click on their own team's request decides it.
    value = _button(_message(slack, own), "synthorg.deny")
    assert _post(_click_body(value, "U0CAROL", "synthorg.deny", slack.url("/respond"))).json()["ok"]
    own.refresh_from_db()
    assert own.status == "denied"
