"""Client addresses through real daphne: X-Forwarded-For counts only as written by the
proxies in SYNTHORG_TRUSTED_PROXIES, read from the right; otherwise the peer is the
client. Seen where the console records an address: a token's last use, audit rows, the
per-client refusal budget, and /metrics' loopback door."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from audit_app.models import AuditEvent
from audit_app.refusals import WINDOW_SECONDS
from common.platform.client_address import trusted_networks
from common.testing import wait_until
from synthorg_site.http_edge.client_address import FORWARDED_KEY, PEER_KEY, client_scope
from tests.support.web_node import client_from, web_node
from trust_app.models import AgentToken
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# The proxy in front (loopback) and one more proxy hop further out (a documentation network).
TRUSTED = "127.0.0.1,192.0.2.0/24"


@pytest.fixture(scope="module")
def trusting_node(
    test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with web_node(
        test_env, tmp_path_factory.mktemp("trusting"), SYNTHORG_TRUSTED_PROXIES=TRUSTED
    ) as url:
        yield url


class TokenUse:
    """An agent token whose last-use address is read after each request."""

    def __init__(self) -> None:
        created = agent_create(name=f"addr-{uuid.uuid4().hex[:8]}", access_level="standard")
        self.plaintext = created.token
        self.token = AgentToken.objects.get(agent=created.agent)

    def address_seen(self, base: str, peer: str, forwarded_for: str | None) -> str:
        AgentToken.objects.filter(pk=self.token.pk).update(last_used_address="", last_used_at=None)
        headers = {"Authorization": f"Bearer {self.plaintext}"}
        if forwarded_for is not None:
            headers["X-Forwarded-For"] = forwarded_for
        with client_from(peer, base) as http:
            answer = http.get("/api/v1/me/", headers=headers)
        assert answer.status_code == 200, answer.text
        return AgentToken.objects.get(pk=self.token.pk).last_used_address


@pytest.mark.parametrize(
    "forwarded_for",
    [
        None,
        "203.0.113.7",  # the rightmost (only) hop
        "127.0.0.1, 203.0.113.7",  # loopback on the left
        "203.0.113.7, 127.0.0.1",  # loopback on the right
        "203.0.113.9, 198.51.100.4, 192.0.2.10, 192.0.2.11",  # many hops
    ],
)
def test_without_trusted_proxies_the_peer_is_the_client(
    daphne_server: str, forwarded_for: str | None
) -> None:
    use = TokenUse()
    assert use.address_seen(daphne_server, "127.30.0.1", forwarded_for) == "127.30.0.1"
    # Positive control: the recorded address follows the peer.
    assert use.address_seen(daphne_server, "127.30.0.2", forwarded_for) == "127.30.0.2"


@pytest.mark.parametrize(
    ("forwarded_for", "client"),
    [
        (None, "127.0.0.1"),
        ("203.0.113.7", "203.0.113.7"),
        ("127.0.0.5, 203.0.113.7", "203.0.113.7"),  # a forged leftmost entry is ignored
        ("203.0.113.7, 192.0.2.10", "203.0.113.7"),  # a trusted hop is skipped
        ("203.0.113.9, 198.51.100.4, 192.0.2.10, 192.0.2.11", "198.51.100.4"),
        ("192.0.2.10, 192.0.2.11", "192.0.2.10"),  # all trusted: the leftmost
        ("203.0.113.7, garbage", "127.0.0.1"),  # unreadable: the hop that wrote it
    ],
)
def test_through_a_trusted_proxy_the_header_is_read_from_the_right(
    trusting_node: str, forwarded_for: str | None, client: str
) -> None:
    assert TokenUse().address_seen(trusting_node, "127.0.0.1", forwarded_for) == client


@pytest.mark.parametrize("forwarded_for", ["203.0.113.7", "127.0.0.1", "192.0.2.10"])
def test_a_peer_that_is_not_a_trusted_proxy_cannot_name_another_client(
    trusting_node: str, forwarded_for: str
) -> None:
    use = TokenUse()
    assert use.address_seen(trusting_node, "127.30.1.1", forwarded_for) == "127.30.1.1"
    # Positive control: the trusted proxy's same header is believed.
    assert use.address_seen(trusting_node, "127.0.0.1", "203.0.113.8") == "203.0.113.8"


def _refused_addresses(prefix: str) -> list[str]:
    return [
        e.data["address"]
        for e in AuditEvent.objects.filter(kind="request.refused")
        if e.data["path"].startswith(prefix)
    ]


def test_forged_addresses_do_not_escape_the_refusal_budget(
    daphne_server: str, trusting_node: str
) -> None:
    budget = 20  # SYNTHORG_REFUSAL_AUDIT_PER_MINUTE of the session's web node
    # The budget is per calendar minute: the flood starts well inside one, and the bound
    # counts every minute it touched (a slow machine may still cross into the next).
    while WINDOW_SECONDS - time.time() % WINDOW_SECONDS < 15:
        time.sleep(0.5)
    first = int(time.time() // WINDOW_SECONDS)
    with client_from("127.30.2.1", daphne_server) as http:
        for n in range(30):
            answer = http.get(
                f"/api/v1/no-such-{n}/", headers={"X-Forwarded-For": f"203.0.113.{n + 1}"}
            )
            assert answer.status_code == 404
    windows = int(time.time() // WINDOW_SECONDS) - first + 1
    rows = _refused_addresses("/api/v1/no-such-")
    assert set(rows) == {"127.30.2.1"} and 0 < len(rows) <= budget * windows
    # Positive control: through the trusted proxy, each named client is its own.
    with client_from("127.0.0.1", trusting_node) as http:
        for n in range(3):
            http.get(f"/api/v1/via-proxy-{n}/", headers={"X-Forwarded-For": f"198.51.100.{n + 1}"})
    assert sorted(_refused_addresses("/api/v1/via-proxy-")) == [
        "198.51.100.1",
        "198.51.100.2",
        "198.51.100.3",
    ]


def _metrics(base: str, peer: str, **headers: str) -> httpx.Response:
    with client_from(peer, base) as http:
        return http.get("/metrics", headers=headers)


@pytest.mark.parametrize(
    "header",
    [
        {"X-Forwarded-For": "127.0.0.1, 203.0.113.7"},
        {"X-Forwarded-For": "203.0.113.7, 127.0.0.1"},
        {"X-Forwarded-For": "127.0.0.1"},
        {"Forwarded": "for=127.0.0.1"},
        {"X-Real-IP": "127.0.0.1"},
    ],
)
def test_metrics_from_loopback_only_when_nothing_says_it_was_forwarded(
    daphne_server: str, trusting_node: str, header: dict[str, str]
) -> None:
    for base, peer in (
        (daphne_server, "127.0.0.1"),  # no proxy trusted
        (trusting_node, "127.30.3.1"),  # a loopback peer that is not a trusted proxy
        (trusting_node, "127.0.0.1"),  # the trusted proxy forwarded it
    ):
        refused = _metrics(base, peer, **header)
        assert refused.status_code == 401, (base, peer, refused.text[:200])
        assert refused.json()["error"]["code"] == "unauthenticated"
        # Positive control: the same peer without the header scrapes.
        served = _metrics(base, peer)
        assert served.status_code == 200 and "synthorg_" in served.text


def _raw_from(peer: str, base: str, request: bytes) -> tuple[int, str]:
    """Send ``request`` as it is from ``peer``; (status, X-Request-ID) of the answer."""
    parts = urlsplit(base)
    with socket.create_connection(
        (str(parts.hostname), int(parts.port or 80)), timeout=15, source_address=(peer, 0)
    ) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head = answer.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in head[1:] if ": " in line)
    return int(head[0].split()[1]), headers["x-request-id"]


def test_a_request_daphne_refuses_is_audited_with_the_same_address(
    daphne_server: str, trusting_node: str
) -> None:
    request = (
        b"GET /api/v1/me/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        b"X-Forwarded-For: 203.0.113.44\r\nX-Broken: a\x0bb\r\n\r\n"
    )
    for base, peer, client in (
        (trusting_node, "127.0.0.1", "203.0.113.44"),
        (daphne_server, "127.30.4.1", "127.30.4.1"),
        (trusting_node, "127.30.4.2", "127.30.4.2"),
    ):
        status, request_id = _raw_from(peer, base, request)
        assert status == 400

        def audited(request_id: str = request_id) -> bool:
            return AuditEvent.objects.filter(request_id=request_id).exists()

        wait_until(audited, timeout=60, what="the refusal's audit row")
        event = AuditEvent.objects.get(request_id=request_id)
        assert event.data["address"] == client, (base, peer)


@pytest.mark.parametrize(
    ("kind", "peer", "proto", "scheme", "client"),
    [
        ("http", "127.0.0.1", "https", "https", ("203.0.113.7", 0)),
        ("websocket", "127.0.0.1", "https", "wss", ("203.0.113.7", 0)),
        # A peer that is not a trusted proxy names neither the client nor the scheme.
        ("http", "198.51.100.2", "https", "http", ("198.51.100.2", 5000)),
        ("websocket", "198.51.100.2", "https", "ws", ("198.51.100.2", 5000)),
    ],
)
def test_the_scope_gets_the_client_and_scheme_only_from_a_trusted_proxy(
    kind: str, peer: str, proto: str, scheme: str, client: tuple[str, int]
) -> None:
    scope = {
        "type": kind,
        "scheme": "http" if kind == "http" else "ws",
        "client": (peer, 5000),
        "headers": [(b"x-forwarded-for", b"203.0.113.7"), (b"x-forwarded-proto", proto.encode())],
    }
    changed = client_scope(scope, trusted_networks(["127.0.0.1"]))
    assert (changed["client"], changed["scheme"]) == (client, scheme)
    assert (changed[PEER_KEY], changed[FORWARDED_KEY]) == (peer, True)
    # Control: without forwarding headers the peer stands and nothing says "forwarded".
    plain = client_scope({**scope, "headers": []}, trusted_networks(["127.0.0.1"]))
    assert (plain["client"], plain[FORWARDED_KEY]) == ((peer, 5000), False)
