"""A connection's limits for each agent on its own, beside those of every agent together,
end to end: a daphne, three workers and beat sharing PostgreSQL and Redis, and the
test's own loopback API.

Each worker runs one call at a time, so while a call waits at the API the next call
runs on another worker: what stops it is the limit kept in Redis, not anything the
first worker knows. Each refusal has its control beside it: another agent, on the same
connection at the same moment, going through.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from audit_app.models import AuditEvent
from common.testing import wait_until
from tests.support.cluster import Cluster, cluster
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.net.servers import LoopbackHttpServer, RecordedRequest, Reply
from tools_app.models import Invocation
from trust_app.models import AgentPermissions

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
REDIS_DB = 13
# Requests to /gated wait here, by their ``who`` query value, until the test opens them.
GATES: dict[str, threading.Event] = {}


def _gated(request: RecordedRequest) -> Reply:
    who = request.path.partition("who=")[2]
    GATES.setdefault(who, threading.Event()).wait(timeout=120)
    return Reply(200, {"Content-Type": "application/json"}, b'{"ok": true}')


@pytest.fixture(scope="module")
def api() -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer("127.0.0.1") as server:
        server.route("/api/ping", Reply(200, {"Content-Type": "text/plain"}, b"pong"))
        server.route("/api/gated", _gated)
        yield server


@pytest.fixture(scope="module")
def nodes(
    test_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
    api: LoopbackHttpServer,
) -> Iterator[Cluster]:
    base = api.url("/api")
    config = {
        "connections": [
            {
                "name": "metered",
                "base_url": base,
                "private_network": True,
                "operations": [{"method": "GET", "path": "/ping"}],
                "rate_limit": "4/min",
                "per_agent": {"rate_limit": "2/min"},
            },
            {
                "name": "gated",
                "base_url": base,
                "private_network": True,
                "operations": [{"method": "GET", "path": "/gated"}],
                "max_concurrency": 2,
                "per_agent": {"max_concurrency": 1},
                "timeout_seconds": 120,
            },
        ]
    }
    env = dict(test_env, SYNTHORG_WORKER_CALLS="1")
    root = tmp_path_factory.mktemp("agent-limits")
    with cluster(env, root, config, redis_db=REDIS_DB, web_nodes=1, workers=3) as started:
        yield started


@pytest.fixture(scope="module")
def daphne_server(nodes: Cluster) -> str:
    return nodes.web[0]


@pytest.fixture(autouse=True)
def _opened_gates() -> Iterator[None]:
    yield
    for gate in GATES.values():
        gate.set()  # nothing a failed test left waiting holds the next test's workers


def _agent(make_agent: Callable[..., AgentClient], grants: list[str]) -> AgentClient:
    client = make_agent("standard", autonomy="full")
    AgentPermissions.objects.create(agent=client.agent, sub_constraints={"connections": grants})
    return client


def _submit(client: AgentClient, connection: str, path: str, **query: str) -> str:
    arguments: dict[str, Any] = {"connection": connection, "method": "GET", "path": path}
    if query:
        arguments["query"] = query
    response = client.call(
        "external_data_request", arguments, idempotency_key=uuid.uuid4().hex, wait=0
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _ended(client: AgentClient, invocation: str) -> dict[str, Any]:
    answer: dict[str, Any] = client.get(invocation, wait=20).json()
    for _ in range(6):  # bounded: each wait is 20 s, the calls' own limits far below
        if answer["status"] not in ("queued", "running"):
            break
        answer = client.get(invocation, wait=20).json()
    return answer


def _done(client: AgentClient, connection: str, path: str, **query: str) -> dict[str, Any]:
    return _ended(client, _submit(client, connection, path, **query))


def _limited(answer: dict[str, Any]) -> str:
    assert answer["status"] == "failed", answer
    assert answer["error"]["code"] == "LIMIT_EXCEEDED", answer
    return str(answer["error"]["message"])


def _seen(api: LoopbackHttpServer, who: str) -> int:
    return api.count(f"/api/gated?who={who}")


def test_an_agent_over_its_own_rate_limit_is_refused_while_another_goes(
    make_agent: Callable[..., AgentClient], api: LoopbackHttpServer
) -> None:
    first = _agent(make_agent, ["metered"])
    second = _agent(make_agent, ["metered"])
    third = _agent(make_agent, ["metered"])
    before = api.count("/api/ping")

    assert _done(first, "metered", "/ping")["status"] == "succeeded"
    assert _done(first, "metered", "/ping")["status"] == "succeeded"
    # The first agent has used its own two a minute: refused twice, nothing sent.
    for _ in range(2):
        message = _limited(_done(first, "metered", "/ping"))
        assert "this agent is over its own rate limit of 2/min (per_agent.rate_limit)" in message
        assert "every agent together" not in message, message
        assert "nothing was sent" in message and "retry in " in message
    assert api.count("/api/ping") == before + 2

    # Control: another agent goes, twice; the first agent's refusals took none of the
    # four a minute every agent has together.
    assert _done(second, "metered", "/ping")["status"] == "succeeded"
    assert _done(second, "metered", "/ping")["status"] == "succeeded"
    assert api.count("/api/ping") == before + 4

    # Every agent's limit still holds: a third agent, within its own, is refused by it.
    message = _limited(_done(third, "metered", "/ping"))
    assert "every agent together is over its rate limit of 4/min (rate_limit)" in message
    assert "this agent" not in message, message
    assert api.count("/api/ping") == before + 4

    refusals = AuditEvent.objects.filter(
        kind="external_data.request", outcome="rate_limited", data__connection="metered"
    )
    own = refusals.filter(agent_id=first.agent.id, reason__contains="per_agent.rate_limit")
    assert own.count() == 2
    assert refusals.filter(agent_id=third.agent.id, reason__contains="(rate_limit)").count() == 1
    assert not refusals.filter(agent_id=second.agent.id).exists()


def test_an_agent_at_its_own_concurrency_limit_is_refused_while_another_goes(
    make_agent: Callable[..., AgentClient], api: LoopbackHttpServer, nodes: Cluster
) -> None:
    first = _agent(make_agent, ["gated"])
    second = _agent(make_agent, ["gated"])
    third = _agent(make_agent, ["gated"])
    gates = {who: GATES.setdefault(who, threading.Event()) for who in ("a1", "b1")}

    # The first agent's request waits at the API on a worker, holding its one slot.
    held = _submit(first, "gated", "/gated", who="a1")
    wait_until(lambda: _seen(api, "a1") == 1, timeout=90, what="the first request at the API")

    # Its second request runs on another worker (the first one's is busy) and is refused.
    refused = _submit(first, "gated", "/gated", who="a2")
    message = _limited(_ended(first, refused))
    assert (
        "this agent already has 1 request in flight, its own concurrency limit "
        "(per_agent.max_concurrency)" in message
    ), message
    assert "every agent together" not in message and "retry in a few seconds" in message
    assert _seen(api, "a2") == 0

    # Control: another agent's request goes at the same moment (the second of every
    # agent's two slots), and waits at the API too.
    other = _submit(second, "gated", "/gated", who="b1")
    wait_until(lambda: _seen(api, "b1") == 1, timeout=90, what="the second agent's request")

    # Every agent's limit still holds: with two in flight, a third agent is refused by it.
    crowded = _submit(third, "gated", "/gated", who="c1")
    message = _limited(_ended(third, crowded))
    assert (
        "every agent together already has 2 requests in flight, the connection's "
        "concurrency limit (max_concurrency)" in message
    ), message
    assert "this agent" not in message
    assert _seen(api, "c1") == 0

    # Each refusal was decided on a worker other than those holding the slots.
    worker = dict(
        Invocation.objects.filter(id__in=[held, refused, other, crowded]).values_list(
            "id", "worker"
        )
    )
    by_call = {name: worker[uuid.UUID(id_)] for name, id_ in (
        ("a1", held), ("a2", refused), ("b1", other), ("c1", crowded))}  # fmt: skip
    assert all(by_call.values()), by_call
    assert by_call["a2"] != by_call["a1"], by_call
    assert by_call["c1"] not in (by_call["a1"], by_call["b1"]), by_call

    for gate in gates.values():
        gate.set()
    assert _ended(first, held)["status"] == "succeeded"
    assert _ended(second, other)["status"] == "succeeded"
    # Control: with the slots given back, the third agent goes.
    GATES.setdefault("c2", threading.Event()).set()
    assert _done(third, "gated", "/gated", who="c2")["status"] == "succeeded"
    assert _seen(api, "c2") == 1

    limited = AuditEvent.objects.filter(
        kind="external_data.request", outcome="concurrency_limited", data__connection="gated"
    )
    assert limited.filter(
        agent_id=first.agent.id, reason__contains="per_agent.max_concurrency"
    ).exists()
    assert limited.filter(agent_id=third.agent.id, reason__contains="(max_concurrency)").exists()
    assert not limited.filter(agent_id=second.agent.id).exists()
