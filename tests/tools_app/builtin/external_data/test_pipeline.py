"""external_data_request end to end: a daphne and a worker whose config names connections.

The API is the test's own loopback server: it answers "authorized" only to the real
credential and echoes what it was sent, as a careless server would. A second loopback
address plays another host a redirect may point to. Every refusal has its control
beside it: the same agent and connection doing the allowed thing.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from django.test import Client

from audit_app.models import AuditEvent
from audit_app.record import Actor
from secrets_app.services import secret_set
from tests.support.pipeline import Pipeline, configured_pipeline
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.net.servers import LoopbackHttpServer, RecordedRequest, Reply
from tools_app.models import Invocation
from trust_app.models import AgentPermissions
from trust_app.services.agents import person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
ADMIN = Actor.system("test admin")
REDIS_DB = 10
SECRET = "BILLING_API_TOKEN"
INVOICE = "/api/invoices/7"
# The value the API accepts: the stored secret of the test being run.
ACCEPTED: dict[str, str] = {}


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[LoopbackHttpServer]:
    """Another host: nothing may ever reach it."""
    with LoopbackHttpServer("127.0.0.2") as server:
        server.route("/stolen", Reply(200, {"Content-Type": "text/plain"}, b"stolen"))
        yield server


@pytest.fixture(scope="module")
def api(elsewhere: LoopbackHttpServer) -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer("127.0.0.1") as server:
        server.route(INVOICE, _invoice)
        server.route("/api/invoices/8", _invoice)
        server.route("/api/invoices", _invoice)
        server.route("/api/admin", _invoice)
        server.route("/api/ping", Reply(200, {"Content-Type": "text/plain"}, b"pong"))
        server.route("/api/old", Reply(302, {"Location": INVOICE}))
        server.route("/api/moved", Reply(302, {"Location": elsewhere.url("/stolen")}))
        yield server


def _invoice(request: RecordedRequest) -> Reply:
    """Authorized only with the stored credential; echoes what it was sent."""
    sent = (request.header_values("Authorization") or [""])[0]
    if not ACCEPTED.get("value") or sent != f"Bearer {ACCEPTED['value']}":
        return Reply(401, {"Content-Type": "application/json"}, b'{"error": "unauthorized"}')
    body = {"id": 7, "authorized": True, "you sent": sent, "method": request.method}
    if request.body:
        body["received"] = json.loads(request.body)
    return Reply(
        200, {"Content-Type": "application/json", "X-Echo": sent}, json.dumps(body).encode()
    )


def _connection(name: str, api: LoopbackHttpServer, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "base_url": api.url("/api"),
        "auth": {"secret": SECRET, "scheme": "bearer"},
        "private_network": True,
        **extra,
    }


@pytest.fixture(scope="module")
def pipeline(
    test_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
    api: LoopbackHttpServer,
) -> Iterator[Pipeline]:
    config = {
        "connections": [
            _connection(
                "billing",
                api,
                operations=[
                    {"method": "GET", "path": "/invoices/{id}", "name": "read_invoice"},
                    {"method": "POST", "path": "/invoices", "kind": "write"},
                    {"method": "GET", "path": "/old"},
                    {"method": "GET", "path": "/moved"},
                ],
            ),
            _connection(
                "limited", api, rate_limit="2/min", operations=[{"method": "GET", "path": "/ping"}]
            ),
        ]
    }
    root = tmp_path_factory.mktemp("external-data")
    with configured_pipeline(test_env, root, config, redis_db=REDIS_DB) as started:
        yield started


@pytest.fixture(scope="module")
def daphne_server(pipeline: Pipeline) -> str:
    return pipeline.url


@pytest.fixture(autouse=True)
def _settled(pipeline: Pipeline) -> Iterator[None]:
    yield
    pipeline.settle()


@pytest.fixture
def credential() -> str:
    value = f"sk-{secrets.token_urlsafe(30)}"
    secret_set(name=SECRET, value=value, actor=ADMIN)
    ACCEPTED["value"] = value
    return value


def _agent(
    make_agent: Callable[..., AgentClient], grants: list[str], autonomy: str = "full"
) -> AgentClient:
    client = make_agent("standard", autonomy=autonomy)
    AgentPermissions.objects.create(agent=client.agent, sub_constraints={"connections": grants})
    return client


def _request(client: AgentClient, connection: str, method: str, path: str, **more: Any) -> Any:
    arguments = {"connection": connection, "method": method, "path": path, **more}
    return client.call(
        "external_data_request", arguments, idempotency_key=uuid.uuid4().hex, wait=20
    )


def _settle(client: AgentClient, answer: dict[str, Any]) -> dict[str, Any]:
    for _ in range(3):  # bounded: the call's own limit is far below this
        if answer["status"] not in ("queued", "running"):
            break
        answer = client.get(answer["id"], wait=20).json()
    return answer


def _done(client: AgentClient, connection: str, method: str, path: str, **more: Any) -> Any:
    response = _request(client, connection, method, path, **more)
    assert response.status_code == 201, response.text
    return _settle(client, response.json())


def _refused(client: AgentClient, connection: str, method: str, path: str) -> dict[str, Any]:
    """A call denied when decided: recorded as denied, never queued."""
    response = _request(client, connection, method, path)
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["status"] == "denied" and answer["queue"] is None, answer
    return {**answer["error"], "rule": answer["decision"]["rule"]}


def test_a_read_sends_the_credential_and_the_agent_never_sees_it(
    make_agent: Callable[..., AgentClient], api: LoopbackHttpServer, credential: str
) -> None:
    client = _agent(make_agent, ["billing"])
    answer = _done(client, "billing", "GET", "/invoices/7")

    # Positive control: the credential reached the API, which answered "authorized".
    assert answer["status"] == "succeeded", answer
    assert api.requests[-1].header_values("Authorization") == [f"Bearer {credential}"]
    result = answer["result"]["structured"]
    assert result["status"] == 200 and result["truncated"] is False
    assert result["body"]["authorized"] is True and result["body"]["id"] == 7
    # The attack: the server echoed it in its body and a header; both come back masked.
    assert result["body"]["you sent"] == "Bearer [REDACTED]", result
    assert result["headers"]["x-echo"] == "Bearer [REDACTED]", result
    assert credential not in json.dumps(answer)

    invocation = Invocation.objects.get(id=answer["id"])
    stored = json.dumps(
        [invocation.arguments, invocation.content, invocation.raw_content, invocation.structured]
    )
    assert credential not in stored
    audit = json.dumps(list(AuditEvent.objects.values("reason", "data")), default=str)
    assert credential not in audit
    # The request's own audit row: connection, operation, status, bytes.
    row = AuditEvent.objects.get(kind="external_data.request", invocation_id=invocation.id)
    assert row.data["connection"] == "billing"
    assert row.data["operation"] == "read_invoice"
    assert row.data["status"] == 200 and row.data["bytes"] > 0
    assert AuditEvent.objects.filter(
        kind="secret.used", invocation_id=invocation.id, data__connection="billing"
    ).exists()


def test_an_operation_not_listed_is_refused_before_anything_is_sent(
    make_agent: Callable[..., AgentClient], api: LoopbackHttpServer, credential: str
) -> None:
    client = _agent(make_agent, ["billing"])
    before = api.count()
    for method, path in (("DELETE", "/invoices/7"), ("GET", "/admin"), ("GET", "/invoices")):
        error = _refused(client, "billing", method, path)
        assert "matches no operation of connection billing" in error["message"], error
        assert error["rule"] == "connection_operation"
    assert api.count() == before

    # Control: the listed operation goes.
    assert _done(client, "billing", "GET", "/invoices/7")["status"] == "succeeded"
    assert api.count() == before + 1


def test_paths_that_escape_the_base_url_are_refused(
    make_agent: Callable[..., AgentClient],
    api: LoopbackHttpServer,
    elsewhere: LoopbackHttpServer,
    credential: str,
) -> None:
    client = _agent(make_agent, ["billing"])
    before = api.count()
    escapes = [
        "/invoices/../admin",
        "/invoices/7/../../admin",
        "/invoices/%2e%2e",
        "/invoices/%252e%252e",
        "/invoices/7%2f..%2f..%2fadmin",
        "/invoices/7%5c..",
        "//127.0.0.2:{port}/stolen",
        "http://127.0.0.2:{port}/stolen",
        "127.0.0.2/stolen",
        "/invoices/7?x=/../admin",
        "/invoices//7",
    ]
    for escape in escapes:
        error = _refused(client, "billing", "GET", escape.format(port=elsewhere.port))
        assert error["rule"] == "connection_operation", (escape, error)
    assert api.count() == before
    assert elsewhere.count() == 0

    # Control: a path under the base that matches an operation goes.
    done = _done(client, "billing", "GET", "/invoices/8")
    assert done["status"] == "succeeded", done
    assert api.count() == before + 1


def test_a_write_asks_a_person_and_runs_after_approval(
    make_agent: Callable[..., AgentClient],
    api: LoopbackHttpServer,
    credential: str,
    daphne_server: str,
) -> None:
    client = _agent(make_agent, ["billing"])
    operator = person_create(username=f"op-{uuid.uuid4().hex[:6]}", role="operator", password=None)
    browser = Client()
    browser.force_login(operator)

    response = _request(client, "billing", "POST", "/invoices", body={"amount": 5})
    assert response.status_code == 201, response.text
    pending = response.json()
    assert pending["status"] == "pending_approval", pending
    assert "write operation" in pending["decision"]["reason"], pending
    assert not [r for r in api.requests if r.method == "POST"]

    # The card shows the connection, the method and path, and the operation's kind.
    page = browser.get("/approvals/").content.decode()
    assert "POST &quot;/invoices&quot; on connection &quot;billing&quot;" in page, page[-3000:]
    assert "a write operation" in page
    assert credential not in page

    # Decided through the pipeline's own web node, so the run goes to its worker.
    decided = httpx.post(
        f"{daphne_server}/api/v1/approvals/{pending['approval']['id']}/decide/",
        json={"decision": "approve", "reason": "checked"},
        headers={"Authorization": f"Bearer {person_token_issue(person=operator)}"},
        timeout=60,
    )
    assert decided.status_code == 200, decided.text
    done = _settle(client, client.get(pending["id"], wait=20).json())
    assert done["status"] == "succeeded", done
    posted = [r for r in api.requests if r.method == "POST"]
    assert len(posted) == 1 and json.loads(posted[0].body) == {"amount": 5}
    assert posted[0].header_values("Authorization") == [f"Bearer {credential}"]

    # Control: a read by the same agent under the same autonomy asks nobody.
    read = _request(client, "billing", "GET", "/invoices/7")
    assert read.json()["status"] != "pending_approval", read.text


def test_an_ungranted_connection_or_operation_is_refused_when_decided(
    make_agent: Callable[..., AgentClient], api: LoopbackHttpServer, credential: str
) -> None:
    before = api.count()
    stranger = _agent(make_agent, ["limited"])
    error = _refused(stranger, "billing", "GET", "/invoices/7")
    assert "connection 'billing' is not granted to this agent" in error["message"], error
    assert error["rule"] == "connection_not_granted"
    unknown = _refused(stranger, "no-such", "GET", "/invoices/7")
    assert "is not granted to this agent" in unknown["message"], unknown

    narrow = _agent(make_agent, ["billing:read_invoice"])
    error = _refused(narrow, "billing", "GET", "/old")
    assert "operation 'GET /old' of connection billing is not granted" in error["message"], error
    assert api.count() == before

    # Controls: the granted operation goes; granted the connection, the first agent goes.
    assert _done(narrow, "billing", "GET", "/invoices/7")["status"] == "succeeded"
    AgentPermissions.objects.filter(agent=stranger.agent).update(
        sub_constraints={"connections": ["limited", "billing"]}
    )
    assert _done(stranger, "billing", "GET", "/invoices/7")["status"] == "succeeded"
    assert api.count() == before + 2


def test_the_rate_limit_holds_across_agents(
    make_agent: Callable[..., AgentClient], api: LoopbackHttpServer, credential: str
) -> None:
    first = _agent(make_agent, ["limited"])
    second = _agent(make_agent, ["limited"])
    before = api.count("/api/ping")
    # Control: within the limit (two a minute, every agent together), both go.
    assert _done(first, "limited", "GET", "/ping")["status"] == "succeeded"
    assert _done(second, "limited", "GET", "/ping")["status"] == "succeeded"
    assert api.count("/api/ping") == before + 2

    over = _done(first, "limited", "GET", "/ping")
    assert over["status"] == "failed", over
    assert over["error"]["code"] == "LIMIT_EXCEEDED", over
    assert "over its rate limit of 2/min" in over["error"]["message"], over
    assert "retry in" in over["error"]["message"]
    assert api.count("/api/ping") == before + 2
    assert AuditEvent.objects.filter(
        kind="external_data.request", outcome="rate_limited", data__connection="limited"
    ).exists()


def test_a_redirect_to_another_host_is_not_followed(
    make_agent: Callable[..., AgentClient],
    api: LoopbackHttpServer,
    elsewhere: LoopbackHttpServer,
    credential: str,
) -> None:
    client = _agent(make_agent, ["billing"])
    moved = _done(client, "billing", "GET", "/moved")
    assert moved["status"] == "failed", moved
    assert moved["error"]["code"] == "HOST_NOT_ALLOWED", moved
    assert elsewhere.count() == 0
    assert credential not in json.dumps(moved)

    # Control: a redirect within the connection's host is followed, credential and all.
    old = _done(client, "billing", "GET", "/old")
    assert old["status"] == "succeeded", old
    assert old["result"]["structured"]["body"]["authorized"] is True
    assert api.requests[-1].path == INVOICE
