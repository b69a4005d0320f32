"""A named secret in http_request's header, through real daphne and a real worker.

The test's own loopback server receives the value (the positive control: the
secret reached where it was meant to go) and echoes it back plain, base64 and
hex, in its body and headers. The agent never reads it: not in the REST answer,
the stored call, the audit rows, the auditors' export, the worker's log or the
approval card.
A reference the agent is not granted is refused with the same words whether or
not the name exists, and nothing is stored or sent.
"""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client

from approvals_app.models import ApprovalRequest
from approvals_app.services import approval_decide
from audit_app.models import AuditEvent
from audit_app.record import Actor
from common.errors import ConflictError
from common.testing import RunningProcess
from secrets_app.services import secret_grant, secret_set, secret_ungrant
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.net.servers import LoopbackHttpServer, RecordedRequest, Reply
from tools_app.models import Invocation
from trust_app.models import AgentPermissions
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
ADMIN = Actor.system("test admin")


@pytest.fixture(autouse=True)
def _worker(celery_worker_process: RunningProcess) -> RunningProcess:
    return celery_worker_process


@pytest.fixture
def web() -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer("127.0.0.1") as server:
        server.route("/echo", _echo)
        yield server


def _echo(request: RecordedRequest) -> Reply:
    """Send the Authorization header back every way a careless server might."""
    sent = (request.header_values("Authorization") or [""])[0]
    token = sent.removeprefix("Bearer ")
    body = "\n".join(
        [
            f"you sent: {sent}",
            f"base64: {base64.b64encode(sent.encode()).decode()}",
            f"token base64: {base64.b64encode(token.encode()).decode()}",
            f"token urlsafe: {base64.urlsafe_b64encode(token.encode()).decode()}",
            f"hex: {token.encode().hex()}",
        ]
    )
    return Reply(200, {"Content-Type": "text/plain", "X-Echo": sent}, body.encode())


def _spellings(value: str) -> list[str]:
    raw = value.encode()
    return [
        value,
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        raw.hex(),
    ]


def _leaks(value: str, text: str) -> list[str]:
    return [s for s in _spellings(value) if s in text]


def _fetcher(make_agent: Callable[..., AgentClient], autonomy: str) -> AgentClient:
    client = make_agent("standard", autonomy=autonomy)
    AgentPermissions.objects.create(
        agent=client.agent, sub_constraints={"allowed_hosts": ["127.0.0.1"]}
    )
    return client


def _secret(prefix: str) -> tuple[str, str]:
    name = f"{prefix}_{uuid.uuid4().hex[:8].upper()}"
    value = f"sk-{secrets.token_urlsafe(30)}"
    secret_set(name=name, value=value, actor=ADMIN)
    return name, value


def _call(client: AgentClient, url: str, headers: dict[str, str], wait: int = 20) -> Any:
    response = client.call(
        "http_request",
        {"url": url, "headers": headers},
        idempotency_key=uuid.uuid4().hex,
        wait=wait,
    )
    return response


def _settled(client: AgentClient, answer: dict[str, Any]) -> dict[str, Any]:
    for _ in range(3):  # bounded: the call's own limit is far below this
        if answer["status"] not in ("queued", "running", "pending_approval"):
            break
        answer = client.get(answer["id"], wait=20).json()
    return answer


def _auditor() -> Client:
    browser = Client()
    browser.force_login(
        person_create(username=f"aud-{uuid.uuid4().hex[:6]}", role="auditor", password=None)
    )
    return browser


def test_a_granted_header_secret_reaches_the_server_and_never_the_agent(
    make_agent: Callable[..., AgentClient],
    web: LoopbackHttpServer,
    celery_worker_process: RunningProcess,
) -> None:
    client = _fetcher(make_agent, "full")
    name, value = _secret("ECHO_TOKEN")
    secret_grant(name=name, agent=client.agent, tool="http_request", actor=ADMIN)

    response = _call(client, web.url("/echo"), {"Authorization": f"Bearer ${{secret:{name}}}"})
    assert response.status_code == 201, response.text
    answer = _settled(client, response.json())

    # Positive control: the value went where it was meant to.
    assert web.requests[-1].header_values("Authorization") == [f"Bearer {value}"]
    assert answer["status"] == "succeeded", answer
    body = answer["result"]["structured"]["body"]
    assert "you sent: Bearer [REDACTED" in body, body
    assert "base64:" in body and "hex:" in body

    # The attack: the echo, in every spelling, is nowhere the agent or a person reads it.
    assert not _leaks(value, json.dumps(answer)), answer
    invocation = Invocation.objects.get(id=answer["id"])
    assert invocation.arguments["headers"]["Authorization"] == f"Bearer ${{secret:{name}}}"
    stored = json.dumps(
        [
            invocation.arguments,
            invocation.arguments_redacted,
            invocation.content,
            invocation.raw_content,
            invocation.structured,
            invocation.error_message,
        ]
    )
    assert not _leaks(value, stored)
    audit = json.dumps(list(AuditEvent.objects.values("reason", "data")), default=str)
    assert not _leaks(value, audit)
    export = _auditor().get("/audit/export.jsonl")
    assert export.status_code == 200
    exported = b"".join(export.streaming_content).decode()  # type: ignore[attr-defined]
    assert str(invocation.id) in exported and not _leaks(value, exported)

    # Nor in the worker's log.
    assert not _leaks(value, celery_worker_process.output())

    # Every use audited: secret name, agent, tool, invocation.
    used = AuditEvent.objects.get(kind="secret.used", invocation_id=invocation.id)
    assert (used.agent_name, used.tool, used.data["secret"]) == (
        client.agent.name,
        "http_request",
        name,
    )


def test_a_secret_not_granted_is_refused_like_one_that_does_not_exist(
    make_agent: Callable[..., AgentClient], web: LoopbackHttpServer
) -> None:
    client = _fetcher(make_agent, "full")
    other = make_agent("standard")
    name, value = _secret("NOT_YOURS")
    # Granted to another agent, and to this one for nothing.
    secret_grant(name=name, agent=other.agent, tool="http_request", actor=ADMIN)
    missing = f"NO_SUCH_{uuid.uuid4().hex[:8].upper()}"

    answers = {}
    for asked in (name, missing):
        response = _call(client, web.url("/echo"), {"Authorization": f"Bearer ${{secret:{asked}}}"})
        assert response.status_code == 403, response.text
        answers[asked] = response.json()["error"]
        assert asked not in response.text
    # The same words whether or not the name exists.
    assert answers[name] == answers[missing]
    assert "arguments.headers.Authorization" in answers[name]["message"]
    assert web.count("/echo") == 0
    assert not Invocation.objects.filter(agent=client.agent).exists()
    refused = AuditEvent.objects.filter(
        kind="invocation.refused", agent_name=client.agent.name, outcome="secret_not_granted"
    )
    assert refused.count() == 2

    # Positive control: granted, the same call goes through.
    secret_grant(name=name, agent=client.agent, tool="http_request", actor=ADMIN)
    response = _call(client, web.url("/echo"), {"Authorization": f"Bearer ${{secret:{name}}}"})
    assert response.status_code == 201, response.text
    assert _settled(client, response.json())["status"] == "succeeded"
    assert web.requests[-1].header_values("Authorization") == [f"Bearer {value}"]


def test_a_reference_outside_a_header_is_refused(
    make_agent: Callable[..., AgentClient], web: LoopbackHttpServer
) -> None:
    client = _fetcher(make_agent, "full")
    name, _value = _secret("IN_URL")
    secret_grant(name=name, agent=client.agent, tool="http_request", actor=ADMIN)
    response = client.call(
        "http_request",
        {"url": web.url("/echo") + f"?k=${{secret:{name}}}"},
        idempotency_key=uuid.uuid4().hex,
    )
    assert response.status_code == 400, response.text
    assert "arguments.url cannot hold a secret reference" in response.json()["error"]["message"]
    assert web.count("/echo") == 0


def test_the_card_names_the_secret_and_a_grant_withdrawn_before_approval_refuses_the_run(
    make_agent: Callable[..., AgentClient], web: LoopbackHttpServer
) -> None:
    client = _fetcher(make_agent, "supervised")
    name, value = _secret("CARD_TOKEN")
    secret_grant(name=name, agent=client.agent, tool="http_request", actor=ADMIN)
    operator = person_create(username=f"op-{uuid.uuid4().hex[:6]}", role="operator", password=None)
    browser = Client()
    browser.force_login(operator)

    def ask() -> str:
        response = _call(
            client, web.url("/echo"), {"Authorization": f"Bearer ${{secret:{name}}}"}, wait=0
        )
        assert response.status_code == 201, response.text
        assert response.json()["status"] == "pending_approval", response.text
        return str(response.json()["id"])

    first = ask()
    page = browser.get("/approvals/").content.decode()
    assert (
        f"Uses secret: <code>${{secret:{name}}}</code> in <code>arguments.headers.Authorization"
        in page
    )
    assert not _leaks(value, page)
    api = browser.get("/api/v1/approvals/", {"status": "pending"}).json()
    card = next(r for r in api["results"] if r["invocation"]["id"] == first)
    assert card["invocation"]["secrets"] == [name]
    assert not _leaks(value, json.dumps(api))

    # Positive control: approved, the call runs with the value.
    approval_decide(
        request=ApprovalRequest.objects.get(invocation_id=first), person=operator,
        decision="approve", reason="",
    )  # fmt: skip
    assert _settled(client, client.get(first).json())["status"] == "succeeded"
    assert web.requests[-1].header_values("Authorization") == [f"Bearer {value}"]

    # The attack: the grant is withdrawn while a second call waits. The call is decided
    # again at once and withdrawn: nobody can approve it, the value never goes out.
    second = ask()
    secret_ungrant(name=name, agent=client.agent, tool="http_request", actor=ADMIN)
    with pytest.raises(ConflictError, match="withdrawn"):
        approval_decide(
            request=ApprovalRequest.objects.get(invocation_id=second), person=operator,
            decision="approve", reason="",
        )  # fmt: skip
    answer = client.get(second).json()
    assert answer["status"] == "denied", answer
    assert answer["error"]["code"] == "no_longer_permitted", answer
    assert name not in answer["error"]["message"]
    assert web.count("/echo") == 1


def test_a_grant_that_names_hosts_sends_the_value_to_those_hosts_only(
    make_agent: Callable[..., AgentClient], web: LoopbackHttpServer
) -> None:
    client = _fetcher(make_agent, "full")
    name, value = _secret("HOSTED_TOKEN")
    headers = {"Authorization": f"Bearer ${{secret:{name}}}"}
    # Granted for another host: the request to this one is refused, nothing sent.
    secret_grant(
        name=name, agent=client.agent, tool="http_request", hosts=["api.example.com"], actor=ADMIN
    )
    answer = _settled(client, _call(client, web.url("/echo"), headers).json())
    assert answer["status"] == "failed", answer
    assert answer["error"]["code"] == "secret_not_granted", answer
    assert "granted for api.example.com only" in answer["error"]["message"], answer
    assert web.count("/echo") == 0
    # Control: granted for this host (and port), the same call carries the value.
    secret_grant(
        name=name,
        agent=client.agent,
        tool="http_request",
        hosts=[f"127.0.0.1:{web.port}"],
        actor=ADMIN,
    )
    done = _settled(client, _call(client, web.url("/echo"), headers).json())
    assert done["status"] == "succeeded", done
    assert web.requests[-1].header_values("Authorization") == [f"Bearer {value}"]
    assert not _leaks(value, json.dumps(done))
