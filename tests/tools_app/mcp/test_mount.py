"""Who may speak to /mcp/: agent tokens only; strangers 401, people 403."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.utils import timezone

from audit_app.models import AuditEvent
from tests.synthorg_site.http_edge.conftest import stranger_budget_reset
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.mcp.conftest import with_mcp
from trust_app.models import AgentToken
from trust_app.services.agents import person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}
# Generous: the first request loads the gateway, on a machine that may be busy.
TIMEOUT = 60


def _post(url: str, token: str | None = None) -> httpx.Response:
    headers = dict(ACCEPT)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(url, json=INITIALIZE, headers=headers, timeout=TIMEOUT)


@pytest.mark.parametrize("path", ["/mcp/", "/mcp"])
def test_no_token_is_401_and_says_what_to_send(daphne_server: str, path: str) -> None:
    stranger_budget_reset()  # a flood test earlier in this minute may have spent it
    response = _post(daphne_server + path)
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["data"]["code"] == "unauthenticated"
    assert "Authorization: Bearer <agent token>" in error["message"]
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.headers["X-Request-ID"]
    assert _refusal_audited(response).outcome == "unauthenticated"


def test_a_revoked_or_forged_agent_token_is_401(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent()
    assert _post(daphne_server + "/mcp/", client.token).status_code == 200
    forged = client.token[:-4] + "AAAA"
    response = _post(daphne_server + "/mcp/", forged)
    assert response.status_code == 401
    assert "the agent token is unknown" in response.json()["error"]["message"]
    AgentToken.objects.filter(agent=client.agent).update(revoked_at=timezone.now())
    assert _post(daphne_server + "/mcp/", client.token).status_code == 401
    assert _post(daphne_server + "/mcp/", "not-a-token").status_code == 401


def test_the_official_client_without_a_valid_token_gets_nowhere(daphne_server: str) -> None:
    async def work(session: Any) -> Any:
        return await session.list_tools()

    with pytest.raises(BaseException) as raised:  # the SDK may wrap it in a group
        with_mcp(daphne_server, "soa_AAAAAAAA_" + "x" * 43, work)
    assert "the agent token is unknown" in repr(raised.value), raised.value


def test_a_person_token_is_refused(daphne_server: str) -> None:
    person = person_create(username="mcp-scripter", role="admin", password=None)
    token = person_token_issue(person=person)
    response = _post(daphne_server + "/mcp/", token)
    assert response.status_code == 403
    assert response.json()["error"]["data"]["code"] == "forbidden"


def test_a_signed_in_session_is_not_an_agent(daphne_server: str) -> None:
    person_create(username="mcp-sess", role="operator", password="pw-sess-123456")
    with httpx.Client(base_url=daphne_server) as browser:
        browser.get("/accounts/login/")
        browser.post(
            "/accounts/login/",
            data={
                "username": "mcp-sess",
                "password": "pw-sess-123456",
                "csrfmiddlewaretoken": browser.cookies["csrftoken"],
            },
            headers={"Referer": daphne_server + "/accounts/login/"},
        )
        assert browser.get("/").status_code == 200, "signed in"
        response = browser.post("/mcp/", json=INITIALIZE, headers=ACCEPT)
    assert response.status_code == 401


def test_the_path_without_a_slash_serves_the_same_gateway(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent()

    async def work(session: Any) -> Any:
        return await session.list_tools()

    listed = with_mcp(daphne_server, client.token, work, path="/mcp")
    assert "read_file" in {t.name for t in listed.tools}


def test_django_still_serves_everything_else(daphne_server: str) -> None:
    assert httpx.get(daphne_server + "/api/v1/me/", timeout=TIMEOUT).status_code == 401
    assert httpx.get(daphne_server + "/mcp-not/", timeout=TIMEOUT).status_code == 404


def test_a_host_outside_allowed_hosts_is_refused(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent()
    headers = {**ACCEPT, "Authorization": f"Bearer {client.token}", "Host": "evil.example"}
    response = httpx.post(
        daphne_server + "/mcp/", json=INITIALIZE, headers=headers, timeout=TIMEOUT
    )
    assert response.status_code == 400
    assert "ALLOWED_HOSTS" in response.json()["error"]["message"]


def _refusal_audited(response: httpx.Response) -> AuditEvent:
    return AuditEvent.objects.get(
        kind="request.refused", request_id=response.headers["X-Request-ID"]
    )


def _headers(token: str) -> dict[str, str]:
    return {**ACCEPT, "Authorization": f"Bearer {token}", "Content-Type": "application/json"}


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_a_stateless_server_answers_anything_but_post_with_405_in_json(
    daphne_server: str, make_agent: Callable[..., AgentClient], method: str
) -> None:
    client = make_agent()
    headers = {"Authorization": f"Bearer {client.token}", "Accept": "text/event-stream"}
    response = httpx.request(method, daphne_server + "/mcp/", headers=headers, timeout=TIMEOUT)
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert response.headers["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == -32600 and error["data"]["code"] == "method_not_allowed"
    assert "stateless" in error["message"] and "POST one JSON-RPC message" in error["message"]
    audited = _refusal_audited(response)
    assert audited.outcome == "method_not_allowed" and audited.agent_id == client.agent.id
    # Positive control: the same agent's POST is served.
    assert _post(daphne_server + "/mcp/", client.token).status_code == 200


def test_a_batch_gets_a_json_rpc_error_not_a_validation_dump(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent()
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    response = httpx.post(
        daphne_server + "/mcp/",
        json=[INITIALIZE, listing],
        headers=_headers(client.token),
        timeout=TIMEOUT,
    )
    assert response.status_code == 400
    body = response.json()
    assert body["id"] is None and body["error"]["code"] == -32600
    assert "batches are not supported" in body["error"]["message"]
    assert "validation" not in response.text.lower() and "pydantic" not in response.text
    assert "batches are not supported" in _refusal_audited(response).reason
    # Positive control: the first message of the batch, sent alone, is answered.
    alone = httpx.post(
        daphne_server + "/mcp/", json=INITIALIZE, headers=_headers(client.token), timeout=TIMEOUT
    )
    assert alone.status_code == 200 and alone.json()["id"] == 1


def test_a_malformed_message_names_what_is_wrong_with_its_json_rpc_code(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent()
    response = httpx.post(
        daphne_server + "/mcp/",
        content=b'{"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": [1]}',
        headers=_headers(client.token),
    )
    assert response.status_code == 400
    body = response.json()
    assert body["id"] == 4 and body["error"]["code"] == -32600
    assert '"params" must be an object' in body["error"]["message"]
    broken = httpx.post(
        daphne_server + "/mcp/", content=b"{", headers=_headers(client.token), timeout=TIMEOUT
    )
    assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700


def test_a_body_over_the_limit_is_413_even_when_chunked(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:

    client = make_agent()
    padding = "x" * (settings.SYNTHORG_MAX_REQUEST_BYTES + 10)
    message = {**INITIALIZE, "params": {**INITIALIZE["params"], "padding": padding}}
    body = json.dumps(message).encode()

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 65536):
            yield body[start : start + 65536]

    response = httpx.post(
        daphne_server + "/mcp/", content=chunks(), headers=_headers(client.token), timeout=30
    )
    assert response.status_code == 413
    assert "payload_too_large" in json.dumps(response.json())
    # Positive control: a chunked body under the limit is read whole and served.
    small = json.dumps(INITIALIZE).encode()
    served = httpx.post(
        daphne_server + "/mcp/", content=iter([small[:10], small[10:]]),
        headers=_headers(client.token), timeout=30,
    )  # fmt: skip
    assert served.status_code == 200 and served.json()["id"] == 1
