"""Web push through a loopback push service of the test's own: the console encrypts
for each subscribed browser, and the test decrypts with that browser's keys."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import http_ece
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.test import Client
from django.utils import timezone

from audit_app.models import AuditEvent
from notifications_app.models import Notification, PushSubscription
from notifications_app.push import application_server_key
from notifications_app.services import notification_deliver, notifications_digests_flush
from tests.notifications_app.receiver import Receiver, receiver

pytestmark = pytest.mark.django_db

SUBSCRIBE = "/notifications/push/subscription/"


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class Browser:
    """What a browser holds for one subscription: a P-256 key pair and an auth secret."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.auth = os.urandom(16)

    def subscription(self) -> dict[str, Any]:
        public = self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {
            "endpoint": self.endpoint,
            "keys": {"p256dh": b64url(public), "auth": b64url(self.auth)},
        }

    def read(self, body: bytes) -> dict[str, Any]:
        plain = http_ece.decrypt(
            body, private_key=self.key, auth_secret=self.auth, version="aes128gcm"
        )
        return dict(json.loads(plain))


@pytest.fixture
def push_service() -> Any:
    with receiver("201") as started:
        yield started


@pytest.fixture
def push_channel(
    channels: Callable[..., None], push_service: Receiver, settings: Any, tmp_path: Any
) -> Callable[..., None]:
    settings.SYNTHORG_PUSH_VAPID_KEY_FILE = str(tmp_path / "vapid.pem")
    host = push_service.url.split("/")[2]

    def use(**section: Any) -> None:
        channels(
            {"name": "phones", "type": "push", "endpoint_hosts": [host]},
            console_url="https://console.example",
            **section,
        )

    return use


def signed_in(person: Any) -> Client:
    client = Client()
    client.force_login(person)
    return client


def subscribe(person: Any, browser: Browser) -> int:
    answer = signed_in(person).post(
        SUBSCRIBE, json.dumps(browser.subscription()), content_type="application/json"
    )
    return answer.status_code


def pushes_to(service: Receiver, path: str) -> list[bytes]:
    return [got.body for got in service.received if got.path == path]


def deliver_due(now: Any = None) -> list[str]:
    rows = Notification.objects.filter(status="pending", held=False).order_by("id")
    return [notification_deliver(notification_id=r.id, now=now) for r in rows]


def test_a_subscribed_operator_gets_the_headline_and_link_encrypted_for_their_browser(
    push_channel: Callable[..., None],
    push_service: Receiver,
    pending_request: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    push_channel(digest_window_seconds=0)
    olga, ivan = make_person("operator", "olga"), make_person("operator", "ivan")
    subscribed, left = Browser(push_service.url + "/olga"), Browser(push_service.url + "/ivan")
    assert subscribe(olga, subscribed) == 201
    assert subscribe(ivan, left) == 201
    # Ivan turns push off again: his browser hears nothing.
    gone = signed_in(ivan).delete(
        SUBSCRIBE, json.dumps({"endpoint": left.endpoint}), content_type="application/json"
    )
    assert gone.status_code == 200 and gone.json() == {"removed": 1}
    on = AuditEvent.objects.filter(kind="notification.push_subscribed")
    off = AuditEvent.objects.get(kind="notification.push_unsubscribed")
    assert sorted(e.actor_name for e in on) == ["ivan", "olga"] and off.actor_name == "ivan"
    # The endpoint's path is the browser's capability: the record names the host only.
    assert all("/hook/" not in e.reason for e in [*on, off])
    request = pending_request({"text": "notes/q3.txt"})
    assert deliver_due() == ["sent"]
    [body] = pushes_to(push_service, "/hook/olga")
    assert pushes_to(push_service, "/hook/ivan") == []
    message = subscribed.read(body)
    agent = request.invocation.agent.name
    assert message["url"] == f"https://console.example/approvals/{request.id}/call/"
    assert message["body"] == (
        f'{agent} → test_echo (low risk) waits for approval: test_echo text="notes/q3.txt"'
    )
    assert message["title"] == f"{agent} → test_echo (low)"
    # Only the browser's keys open it: the push service sees ciphertext.
    assert b"notes/q3.txt" not in body
    with pytest.raises(Exception):  # noqa: B017 - any decryption failure
        left.read(body)
    # Signed with the console's VAPID key, the one browsers subscribe with.
    [got] = [g for g in push_service.received if g.path == "/hook/olga"]
    headers = {name.lower(): value for name, value in got.headers.items()}
    assert headers["authorization"].startswith("vapid t="), headers
    assert headers["authorization"].endswith(f",k={application_server_key()}")
    assert headers["content-encoding"] == "aes128gcm"


def test_a_flood_is_one_push_then_one_digest(
    push_channel: Callable[..., None],
    push_service: Receiver,
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    push_channel(digest_window_seconds=60)
    browser = Browser(push_service.url + "/olga")
    assert subscribe(make_person("operator", "olga"), browser) == 201
    agent = make_agent_row()
    for i in range(12):
        submit(agent, arguments={"text": f"n{i}"})
    assert deliver_due() == ["sent"]
    later = timezone.now() + timedelta(seconds=61)
    assert notifications_digests_flush(now=later) == 1
    assert deliver_due(now=later) == ["sent"]
    first, digest = (browser.read(body) for body in pushes_to(push_service, "/hook/olga"))
    assert first["body"].endswith('test_echo text="n0"')
    assert digest["title"] == f"{agent.name}: 11 requests"
    assert digest["body"] == (
        f"{agent.name}: 11 requests wait for approval (test_echo ×11), low risk"
    )
    assert digest["url"] == f"https://console.example/approvals/?agent={agent.name}"


def test_an_endpoint_off_the_push_services_is_refused(
    push_channel: Callable[..., None],
    push_service: Receiver,
    make_person: Callable[..., Any],
) -> None:
    push_channel()
    olga = make_person("operator", "olga")
    for endpoint in (
        "http://127.0.0.1:9/elsewhere",  # a port the channel does not name
        "https://127.0.0.1/x",
        "https://user:pw@fcm.example/x",
        "file:///etc/passwd",
    ):
        assert subscribe(olga, Browser(endpoint)) == 400, endpoint
    assert PushSubscription.objects.count() == 0
    # Control: the channel's own push service is accepted, and a bad key is not.
    assert subscribe(olga, Browser(push_service.url + "/ok")) == 201
    broken = Browser(push_service.url + "/broken").subscription()
    broken["keys"]["auth"] = "short"
    answer = signed_in(olga).post(SUBSCRIBE, json.dumps(broken), content_type="application/json")
    assert answer.status_code == 400 and "keys.auth" in answer.json()["error"]["message"]


def test_only_people_who_decide_the_agents_requests_are_pushed_to(
    push_channel: Callable[..., None],
    push_service: Receiver,
    pending_request: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    push_channel(digest_window_seconds=0)
    auditor = make_person("auditor", "audrey")
    assert subscribe(auditor, Browser(push_service.url + "/audrey")) == 403
    admin = make_person("admin", "ada")
    assert subscribe(admin, Browser(push_service.url + "/ada")) == 201
    # A subscription an auditor held by other means is still never pushed to.
    PushSubscription.objects.create(
        person=auditor, endpoint=push_service.url + "/held", p256dh="x", auth="y"
    )
    pending_request()
    assert deliver_due() == ["sent"]
    assert len(pushes_to(push_service, "/hook/ada")) == 1
    assert pushes_to(push_service, "/hook/held") == []


def test_a_subscription_the_push_service_says_is_gone_is_removed(
    push_channel: Callable[..., None],
    pending_request: Callable[..., Any],
    make_person: Callable[..., Any],
    channels: Callable[..., None],
) -> None:
    with receiver("410") as gone_service:
        host = gone_service.url.split("/")[2]
        channels({"name": "phones", "type": "push", "endpoint_hosts": [host]})
        assert subscribe(make_person("operator", "olga"), Browser(gone_service.url)) == 201
        pending_request()
        assert deliver_due() == ["sent"]
        assert len(gone_service.received) == 1
    assert PushSubscription.objects.count() == 0


def test_the_console_is_installable(client: Client, settings: Any) -> None:
    manifest = client.get("/manifest.webmanifest")
    assert manifest.status_code == 200
    assert manifest["Content-Type"].startswith("application/manifest+json")
    body = manifest.json()
    assert body["start_url"] == "/approvals/" and body["display"] == "standalone"
    icon = Path(settings.BASE_DIR) / body["icons"][0]["src"].removeprefix("/")
    assert icon.is_file()
    worker = client.get("/service-worker.js")
    assert worker.status_code == 200
    assert worker["Content-Type"].startswith("application/javascript")
    assert worker["Service-Worker-Allowed"] == "/"
    assert b"showNotification" in worker.content and b"notificationclick" in worker.content
    # The push page is for people who decide: anonymous visitors sign in first.
    assert client.get("/notifications/push/").status_code == 302


def test_the_push_page_offers_the_control_with_the_consoles_key(
    push_channel: Callable[..., None],
    push_service: Receiver,
    make_person: Callable[..., Any],
    channels: Callable[..., None],
) -> None:
    olga = make_person("operator", "olga")
    channels()  # no push channel: the page says so and offers no control
    page = signed_in(olga).get("/notifications/push/").content.decode()
    assert "not configured" in page and "push-subscribe" not in page
    push_channel()
    page = signed_in(olga).get("/notifications/push/").content.decode()
    assert f'data-public-key="{application_server_key()}"' in page
    assert "Turn on for this browser" in page and "Turn off for this browser" in page
    assert signed_in(make_person("auditor")).get("/notifications/push/").status_code == 403


def test_a_subscription_needs_the_csrf_token_of_the_persons_session(
    push_channel: Callable[..., None],
    push_service: Receiver,
    make_person: Callable[..., Any],
) -> None:
    push_channel()
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_person("operator", "olga"))
    body = json.dumps(Browser(push_service.url + "/olga").subscription())
    refused = client.post(SUBSCRIBE, body, content_type="application/json")
    assert refused.status_code == 403 and PushSubscription.objects.count() == 0
    # Control: with the token of the session's page, as push.js sends it.
    client.get("/notifications/push/")
    token = client.cookies["csrftoken"].value
    taken = client.post(SUBSCRIBE, body, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert taken.status_code == 201 and PushSubscription.objects.count() == 1
