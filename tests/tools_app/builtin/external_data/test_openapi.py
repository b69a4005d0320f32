"""A connection described by an OpenAPI document, end to end: a daphne and a worker whose
config names the document (relative to the config file), and the test's own loopback
API serving what it describes.

The document's operations are what an agent may call (one outside it is refused, one
switched off by an override is refused), its POST is a write that asks a person unless
an override marks it read, fields named by JSON pointer never reach the agent or the
audit, the agent is told its operations in ``tools/list`` and over REST (L2/L3), and
the connections page shows the whole connection to an admin only. Controls beside each.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from audit_app.models import AuditEvent
from tests.support.pipeline import Pipeline, configured_pipeline
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.mcp.conftest import with_mcp
from tests.tools_app.net.servers import LoopbackHttpServer, RecordedRequest, Reply
from tools_app.models import Invocation
from trust_app.models import AgentPermissions
from trust_app.services.agents import person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
REDIS_DB = 11
SSN = "078-05-1120"
CARD = "4000056655665556"
DOCUMENT = """
openapi: 3.0.3
info: {title: CRM, version: "1"}
paths:
  /customers:
    get:
      operationId: listCustomers
      responses: {"200": {description: every customer}}
    post:
      operationId: createCustomer
      responses: {"201": {description: created}}
  /customers/{customer-id}:
    get:
      operationId: getCustomer
      responses: {"200": {description: one customer}}
    delete:
      operationId: deleteCustomer
      responses: {"204": {description: gone}}
  /customers/search:
    post:
      operationId: searchCustomers
      responses: {"200": {description: matches}}
"""


def _json(status: int, body: Any) -> Reply:
    return Reply(status, {"Content-Type": "application/json"}, json.dumps(body).encode())


def _customer(request: RecordedRequest) -> Reply:
    if request.method == "DELETE":
        return Reply(204, {}, b"")
    return _json(
        200,
        {
            "id": 1,
            "name": "Ada Lovelace",
            "ssn": SSN,
            "cards": [{"last4": CARD[-4:], "number": CARD}, {"last4": "0005", "number": CARD}],
        },
    )


def _customers(request: RecordedRequest) -> Reply:
    if request.method == "POST":
        return _json(201, {"id": 2})
    people = [{"id": 1, "name": "Ada Lovelace", "ssn": SSN}, {"id": 2, "name": "Grace", "ssn": SSN}]
    return _json(200, {"data": people, "total": 2})


@pytest.fixture(scope="module")
def api() -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer("127.0.0.1") as server:
        server.route("/crm/customers", _customers)
        server.route("/crm/customers/1", _customer)
        server.route("/crm/customers/search", lambda _r: _json(200, {"data": [{"id": 1}]}))
        server.route("/crm/internal/export", lambda _r: _json(200, {"everything": SSN}))
        yield server


@pytest.fixture(scope="module")
def pipeline(
    test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory, api: LoopbackHttpServer
) -> Iterator[Pipeline]:
    root = tmp_path_factory.mktemp("openapi-connection")
    (root / "crm-openapi.yaml").write_text(DOCUMENT)
    config = {
        "connections": [
            {
                "name": "crm",
                "base_url": api.url("/crm"),
                "private_network": True,
                "openapi": "crm-openapi.yaml",
                "redact": ["/data/*/ssn"],
                "operation_overrides": {
                    "searchCustomers": {"kind": "read"},
                    "DELETE /customers/{customer-id}": {"enabled": False},
                    "getCustomer": {"redact": ["/ssn", "/cards/*/number"]},
                },
            },
            {
                "name": "weather",
                "base_url": api.url("/weather"),
                "private_network": True,
                "operations": [{"method": "GET", "path": "/today"}],
            },
        ]
    }
    with configured_pipeline(test_env, root, config, redis_db=REDIS_DB) as started:
        yield started


@pytest.fixture(scope="module")
def daphne_server(pipeline: Pipeline) -> str:
    return pipeline.url


@pytest.fixture(autouse=True)
def _settled(pipeline: Pipeline) -> Iterator[None]:
    yield
    pipeline.settle()


def _agent(make_agent: Callable[..., AgentClient], grants: list[str]) -> AgentClient:
    client = make_agent("standard", autonomy="full")
    AgentPermissions.objects.create(agent=client.agent, sub_constraints={"connections": grants})
    return client


def _request(client: AgentClient, method: str, path: str, **more: Any) -> dict[str, Any]:
    arguments = {"connection": "crm", "method": method, "path": path, **more}
    response = client.call(
        "external_data_request", arguments, idempotency_key=uuid.uuid4().hex, wait=20
    )
    assert response.status_code == 201, response.text
    answer = response.json()
    for _ in range(3):  # bounded: the call's own limit is far below this
        if answer["status"] not in ("queued", "running"):
            break
        answer = client.get(answer["id"], wait=20).json()
    return dict(answer)


def test_only_the_documents_operations_are_called(
    make_agent: Callable[..., AgentClient], api: LoopbackHttpServer
) -> None:
    client = _agent(make_agent, ["crm"])
    before = api.count()
    outside = _request(client, "GET", "/internal/export")
    assert outside["status"] == "denied", outside
    assert outside["decision"]["rule"] == "connection_operation", outside
    message = outside["error"]["message"]
    assert "matches no operation of connection crm" in message, message
    # The refusal lists what is allowed: the document's operations, the switched-off one not.
    assert "GET /customers/{customer-id}" in message and "POST /customers/search" in message
    assert "DELETE" not in message, message
    switched_off = _request(client, "DELETE", "/customers/1")
    assert switched_off["status"] == "denied", switched_off
    assert switched_off["decision"]["rule"] == "connection_operation", switched_off
    assert api.count() == before

    # Control: an operation of the document goes, to the connection's host.
    inside = _request(client, "GET", "/customers/1")
    assert inside["status"] == "succeeded", inside
    assert inside["result"]["structured"]["body"]["name"] == "Ada Lovelace"
    assert api.count() == before + 1 and api.requests[-1].path == "/crm/customers/1"
    row = AuditEvent.objects.get(kind="external_data.request", invocation_id=inside["id"])
    assert row.data["operation"] == "getCustomer" and row.data["kind"] == "read"


def test_a_write_asks_a_person_and_a_read_override_does_not(
    make_agent: Callable[..., AgentClient], api: LoopbackHttpServer
) -> None:
    client = _agent(make_agent, ["crm"])
    write = _request(client, "POST", "/customers", body={"name": "Grace"})
    assert write["status"] == "pending_approval", write
    assert "write operation" in write["decision"]["reason"], write
    assert not [r for r in api.requests if r.path == "/crm/customers" and r.method == "POST"]

    # Control: the document's other POST, overridden to read, goes at once.
    search = _request(client, "POST", "/customers/search", body={"name": "Ada"})
    assert search["status"] == "succeeded", search
    assert search["result"]["structured"]["body"] == {"data": [{"id": 1}]}


def test_redacted_fields_never_reach_the_agent_or_the_audit(
    make_agent: Callable[..., AgentClient], api: LoopbackHttpServer
) -> None:
    # Positive control: the API does send the fields (what a careless client would pass on).
    direct = httpx.get(api.url("/crm/customers/1"), timeout=30).json()
    assert direct["ssn"] == SSN and direct["cards"][0]["number"] == CARD

    client = _agent(make_agent, ["crm"])
    one = _request(client, "GET", "/customers/1")
    many = _request(client, "GET", "/customers")
    assert one["status"] == "succeeded" and many["status"] == "succeeded", (one, many)
    body = one["result"]["structured"]["body"]
    assert body["ssn"] == "[REDACTED]", body
    assert [card["number"] for card in body["cards"]] == ["[REDACTED]", "[REDACTED]"]
    # Control: the fields not named come through as the API sent them.
    assert body["name"] == "Ada Lovelace" and body["cards"][0]["last4"] == CARD[-4:]
    listed = many["result"]["structured"]["body"]
    assert [p["ssn"] for p in listed["data"]] == ["[REDACTED]", "[REDACTED]"]
    assert [p["name"] for p in listed["data"]] == ["Ada Lovelace", "Grace"]
    assert listed["total"] == 2

    for answer in (one, many):
        invocation = Invocation.objects.get(id=answer["id"])
        stored = json.dumps(
            [invocation.content, invocation.raw_content, invocation.structured, answer]
        )
        assert SSN not in stored and CARD not in stored
        assert "Ada Lovelace" in stored  # control: the row does hold the response
        events = AuditEvent.objects.filter(invocation_id=invocation.id)
        audit = json.dumps(list(events.values("reason", "data")), default=str)
        assert SSN not in audit and CARD not in audit
        row = events.get(kind="external_data.request")
        assert row.data["redacted_fields"] == (3 if answer is one else 2), row.data


def _mcp_description(client: AgentClient) -> str:
    async def work(session: Any) -> Any:
        return await session.list_tools()

    listed = with_mcp(str(client.http.base_url).rstrip("/"), client.token, work)
    tool = next(t for t in listed.tools if t.name == "external_data_request")
    return str(tool.description)


def test_an_agent_sees_its_own_connections_and_operations(
    make_agent: Callable[..., AgentClient],
) -> None:
    granted = _agent(make_agent, ["crm"])
    other = _agent(make_agent, ["weather"])

    shown = _mcp_description(granted)
    assert "crm:" in shown and "GET /customers/{customer-id}" in shown, shown
    assert "POST /customers (write, asks a person; name createCustomer)" in shown, shown
    assert "deleteCustomer" not in shown and "weather" not in shown, shown
    # An agent granted another connection is not told about this one.
    hidden = _mcp_description(other)
    assert "weather:" in hidden and "GET /today" in hidden, hidden
    assert "crm" not in hidden and "/customers" not in hidden, hidden

    # Over REST: L2 names the resource, L3 holds the whole list as JSON.
    body = granted.http.get("/api/v1/tools/external_data_request/").json()
    assert "connections" in body["resources"], body
    resource = granted.http.get("/api/v1/tools/external_data_request/resources/connections/")
    assert resource.status_code == 200, resource.text
    assert resource.json()["media_type"] == "application/json"
    listing = json.loads(resource.json()["content"])["connections"]
    assert [entry["connection"] for entry in listing] == ["crm"]
    operations = {op["name"]: op for op in listing[0]["operations"]}
    assert set(operations) == {"listCustomers", "createCustomer", "getCustomer", "searchCustomers"}
    assert operations["searchCustomers"]["kind"] == "read"
    assert operations["createCustomer"]["asks_a_person"] is True
    assert operations["getCustomer"]["redacted_fields"] == [
        "/data/*/ssn",
        "/ssn",
        "/cards/*/number",
    ]
    theirs = other.http.get("/api/v1/tools/external_data_request/resources/connections/")
    assert [
        entry["connection"] for entry in json.loads(theirs.json()["content"])["connections"]
    ] == ["weather"]


def test_the_connections_page_is_for_admins(
    make_agent: Callable[..., AgentClient], daphne_server: str
) -> None:
    client = _agent(make_agent, ["crm:getCustomer"])
    admin = person_create(username=f"adm-{uuid.uuid4().hex[:6]}", role="admin", password=None)
    operator = person_create(username=f"op-{uuid.uuid4().hex[:6]}", role="operator", password=None)

    def page(person: Any) -> httpx.Response:
        token = person_token_issue(person=person)
        return httpx.get(
            f"{daphne_server}/connections/",
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )

    shown = page(admin)
    assert shown.status_code == 200, shown.text[-2000:]
    html = shown.text
    assert 'id="connection-crm"' in html and 'id="connection-weather"' in html
    assert "searchCustomers" in html and "<code>POST /customers/search</code>" in html
    assert 'data-kind="write"' in html and "deleteCustomer" not in html
    assert "crm-openapi.yaml" in html and "/cards/*/number" in html
    assert f'data-agent="{client.agent.name}"' in html and "getCustomer" in html
    assert 'href="/connections/"' in html  # reachable from the navigation

    refused = page(operator)
    assert refused.status_code == 403, refused.status_code
    assert "searchCustomers" not in refused.text
    anonymous = httpx.get(f"{daphne_server}/connections/", timeout=60)
    assert (
        anonymous.status_code in (302, 303) and "/accounts/login/" in anonymous.headers["location"]
    )
