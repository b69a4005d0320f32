"""Malformed requests through the real daphne (raw sockets for what no HTTP client would
send) and through the shipped nginx config: every answer is the JSON error envelope,
and beside each refusal the same request made well-formed is served.
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from audit_app.models import AuditEvent
from common.testing import free_port, running, wait_until
from tests.deploy.test_proxy import _config as proxy_config
from tests.synthorg_site.http_edge.conftest import assert_envelope, stranger_budget_reset
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "malformed-tests", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _read_all(sock: socket.socket) -> bytes:
    received = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, ssl.SSLError):
            break
        if not chunk:
            break
        received += chunk
    return received


def raw_exchange(base: str, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `request` as it is over a fresh connection; (status, headers, body) of the
    answer (a chunked body is joined)."""
    parts = urlsplit(base)
    assert parts.hostname and parts.port
    with socket.create_connection((parts.hostname, parts.port), timeout=15) as sock:
        sock.sendall(request)
        return _parsed(_read_all(sock))


def _parsed(answer: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines and lines[0].startswith("HTTP/1.1 "), answer[:300]
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = _unchunked(body)
    return status, headers, body


def _unchunked(body: bytes) -> bytes:
    joined = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        joined += rest[:size]
        body = rest[size + 2 :]
    return joined


def get_with_authorization(path: bytes, value: bytes, *, method: bytes = b"GET") -> bytes:
    return (
        method + b" " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Authorization: " + value + b"\r\nConnection: close\r\n\r\n"
    )


def assert_raw_envelope(
    answer: tuple[int, dict[str, str], bytes], status: int, code: str, *needles: str
) -> dict[str, Any]:
    got, headers, body = answer
    assert got == status, (got, headers, body[:300])
    assert headers.get("content-type", "").startswith("application/json"), (headers, body[:300])
    document = json.loads(body)
    assert set(document) == {"error"}, document
    error = document["error"]
    assert set(error) == {"code", "message", "details"} and error["code"] == code, error
    for needle in needles:
        assert needle in error["message"], (needle, error["message"])
    return dict(error)


def refusals_with(request_id: str) -> list[AuditEvent]:
    def written() -> list[AuditEvent]:
        return list(AuditEvent.objects.filter(request_id=request_id, kind="request.refused"))

    # The audit event of a refusal answered below the application is written just after.
    wait_until(lambda: bool(written()), timeout=10, what="the refusal's audit event")
    return written()


# --- Control characters in a header: refused by twisted before the application.

LINE_BREAKING_TOKENS = [
    pytest.param(b"Bearer abc\rdef", "carriage return", id="carriage-return"),
    pytest.param(b"Bearer abc\ndef", "carriage return", id="line-feed"),
    pytest.param(b"Bearer abc\x00def", "carriage return", id="nul"),
    pytest.param(b"Bearer abc\r\ndef", "has no ':'", id="crlf-splits-the-header"),
]


@pytest.mark.parametrize("path", [b"/api/v1/me/", b"/mcp/"])
@pytest.mark.parametrize(("token", "said"), LINE_BREAKING_TOKENS)
def test_a_bearer_token_with_a_line_break_is_answered_in_the_envelope(
    daphne_server: str, make_agent: Callable[..., AgentClient], path: bytes, token: bytes, said: str
) -> None:
    stranger_budget_reset()
    answer = raw_exchange(daphne_server, get_with_authorization(path, token))
    error = assert_raw_envelope(answer, 400, "invalid_argument", said)
    # The header is named, its value never shown.
    assert b"abc" not in answer[2] and b"def" not in answer[2]
    if said != "has no ':'":
        assert error["details"] == {"header": "Authorization"}
        assert "the Authorization header" in error["message"]
    request_id = answer[1]["x-request-id"]
    [event] = refusals_with(request_id)
    assert event.outcome == "invalid_argument" and event.status == "400"
    assert event.data["path"] == path.decode() and event.data["method"] == "GET"
    assert event.reason == error["message"]
    # Positive control: the same request with a well-formed token reaches the application.
    client = make_agent()
    served = raw_exchange(
        daphne_server,
        get_with_authorization(b"/api/v1/me/", b"Bearer " + client.token.encode()),
    )
    assert served[0] == 200 and json.loads(served[2])["name"] == client.agent.name


def test_a_control_character_daphne_refuses_is_answered_in_the_envelope_on_the_api(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    stranger_budget_reset()
    request = get_with_authorization(b"/api/v1/me/", b"Bearer abc\x0bdef")
    answer = raw_exchange(daphne_server, request)
    error = assert_raw_envelope(answer, 400, "invalid_argument", "the Authorization header")
    assert "control character" in error["message"] and b"abc" not in answer[2]
    assert len(refusals_with(answer[1]["x-request-id"])) == 1
    # Control: a page for people keeps daphne's own answer.
    page = raw_exchange(daphne_server, get_with_authorization(b"/approvals/", b"x\x0by"))
    assert page[0] == 400 and "json" not in page[1].get("content-type", "")
    # Positive control: the same header without the control character is judged by the API.
    unknown = raw_exchange(daphne_server, get_with_authorization(b"/api/v1/me/", b"Bearer abcdef"))
    assert_raw_envelope(unknown, 401, "unauthenticated", "not a valid agent token")


def test_an_unreadable_request_line_is_answered_in_the_envelope(daphne_server: str) -> None:
    stranger_budget_reset()
    answer = raw_exchange(daphne_server, b"NONSENSE\r\nHost: 127.0.0.1\r\n\r\n")
    assert_raw_envelope(answer, 400, "invalid_argument", "METHOD /path HTTP/1.1")
    # Positive control: a well-formed request line on a fresh connection is served.
    served = raw_exchange(
        daphne_server, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    assert served[0] in (200, 503) and "json" in served[1]["content-type"]


# --- The REST 401 hint: readable, not redacted as if it held a token.


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Basic dXNlcjpwYXNz"}, {"Authorization": "Token x"}],
    ids=["no-header", "basic", "other-scheme"],
)
def test_the_401_hint_says_how_to_send_the_token_in_readable_words(
    daphne_server: str, make_agent: Callable[..., AgentClient], headers: dict[str, str]
) -> None:
    response = httpx.get(daphne_server + "/api/v1/me/", headers=headers, timeout=30)
    error = assert_envelope(response, 401, "unauthenticated", "Bearer <your agent token>")
    assert "REDACTED" not in error["message"], error
    assert "`Authorization`" in error["message"]
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    # Positive control: an agent's token sent as the hint says is served.
    client = make_agent()
    served = httpx.get(
        daphne_server + "/api/v1/me/",
        headers={"Authorization": f"Bearer {client.token}"},
        timeout=30,
    )
    assert served.status_code == 200, served.text


# --- MCP: a body not sent as application/json.


def _mcp_post(base: str, token: str, content_type: str | None, body: bytes) -> httpx.Response:
    headers = {**ACCEPT, "Authorization": f"Bearer {token}"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    return httpx.post(base + "/mcp/", content=body, headers=headers, timeout=30)


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", None, "application/jsonx"]
)
def test_an_mcp_post_not_sent_as_json_is_a_json_rpc_error_naming_the_media_type(
    daphne_server: str, make_agent: Callable[..., AgentClient], content_type: str | None
) -> None:
    client = make_agent()
    body = json.dumps(INITIALIZE).encode()
    response = _mcp_post(daphne_server, client.token, content_type, body)
    assert response.status_code == 415, response.text
    assert response.headers["content-type"] == "application/json"
    document = response.json()
    assert document["jsonrpc"] == "2.0" and document["id"] is None
    error = document["error"]
    assert error["code"] == -32600
    assert error["data"] == {"code": "unsupported_media_type", "status": 415}
    assert "application/json" in error["message"]
    if content_type:
        assert content_type in error["message"]
    audited = AuditEvent.objects.get(
        kind="request.refused", request_id=response.headers["X-Request-ID"]
    )
    assert audited.outcome == "unsupported_media_type" and audited.agent_id == client.agent.id
    # Positive control: the same message sent as application/json (any case, with a
    # charset) is served.
    for served_as in ("application/json", "Application/JSON; charset=utf-8"):
        served = _mcp_post(daphne_server, client.token, served_as, body)
        assert served.status_code == 200, (served_as, served.text)
        assert served.json()["id"] == 1


# --- The shipped nginx config in front of the console.


@pytest.fixture
def nginx_proxy(daphne_server: str, tmp_path: Path) -> Iterator[str]:
    """Debian's nginx with the shipped config in front of the session's daphne; yields
    the base URL of its plain HTTPS port (raw requests go over TLS)."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    live = int(daphne_server.rsplit(":", 1)[1])
    tls, plain = free_port(), free_port()
    main = proxy_config(tmp_path, [live, live], tls, plain)
    checked = subprocess.run(
        [nginx, "-t", "-c", str(main)], capture_output=True, text=True, timeout=30
    )
    assert checked.returncode == 0, checked.stderr
    with running([nginx, "-c", str(main)], env={}, log_path=tmp_path / "nginx.out"):
        base = f"https://127.0.0.1:{tls}"
        wait_until(lambda: _proxy_answers(base), timeout=30, what="nginx")
        yield base


def _proxy_answers(base: str) -> bool:
    try:
        with httpx.Client(verify=False, timeout=5) as http:
            return http.get(base + "/healthz").status_code in (200, 503)
    except httpx.HTTPError:
        return False


def tls_exchange(base: str, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """`raw_exchange` over TLS (HTTP/1.1), as an agent talks to the shipped proxy."""
    parts = urlsplit(base)
    assert parts.hostname and parts.port
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["http/1.1"])
    with (
        socket.create_connection((parts.hostname, parts.port), timeout=15) as plain,
        context.wrap_socket(plain, server_hostname=parts.hostname) as sock,
    ):
        sock.sendall(request)
        return _parsed(_read_all(sock))


@pytest.mark.parametrize(
    "token",
    [b"Bearer abc\rdef", b"Bearer abc\x00def"],
    ids=["carriage-return", "nul"],
)
@pytest.mark.parametrize("path", [b"/api/v1/me/", b"/mcp/"])
def test_nginx_answers_a_header_it_cannot_read_in_the_envelope(
    nginx_proxy: str, make_agent: Callable[..., AgentClient], token: bytes, path: bytes
) -> None:
    answer = tls_exchange(nginx_proxy, get_with_authorization(path, token))
    assert_raw_envelope(answer, 400, "invalid_argument", "header")
    assert b"abc" not in answer[2]
    # Positive control: the same request with a well-formed token goes through nginx to
    # the console and is served.
    client = make_agent()
    served = tls_exchange(
        nginx_proxy,
        get_with_authorization(b"/api/v1/me/", b"Bearer " + client.token.encode()),
    )
    assert served[0] == 200 and json.loads(served[2])["name"] == client.agent.name


def test_nginx_answers_an_unreadable_request_line_and_huge_headers_in_the_envelope(
    nginx_proxy: str,
) -> None:
    garbage = tls_exchange(nginx_proxy, b"NONSENSE\r\n\r\n")
    assert_raw_envelope(garbage, 400, "invalid_argument")
    huge = b"X-Filler: " + b"a" * 70_000 + b"\r\n"
    too_large = tls_exchange(
        nginx_proxy, b"GET /api/v1/me/ HTTP/1.1\r\nHost: 127.0.0.1\r\n" + huge + b"\r\n"
    )
    assert_raw_envelope(too_large, 400, "invalid_argument")
    # Positive control: a request nginx reads is the console's to answer (its own 401).
    unknown = tls_exchange(
        nginx_proxy, get_with_authorization(b"/api/v1/me/", b"Bearer " + uuid.uuid4().hex.encode())
    )
    assert_raw_envelope(unknown, 401, "unauthenticated")
