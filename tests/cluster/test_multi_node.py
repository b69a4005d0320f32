"""One console on two web nodes, three workers and beat, sharing PostgreSQL and Redis.

Whatever an agent or a person does on one node holds on the others: a call waiting on
node A is approved on node B; B's inbox hears of A's requests; the MCP gateway answers
on either; a worker killed mid-call loses and doubles nothing; sweeps settle each
request once however many workers run them at once; rate limits and budgets count
across nodes.
"""

from __future__ import annotations

import concurrent.futures
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from celery import Celery
from django.test import Client as DjangoClient
from websockets.sync.client import connect
from websockets.typing import Origin

from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent
from common.testing import wait_until
from tests.approvals_app.conftest import PASSWORD
from tests.support.cluster import Cluster, cluster
from tests.tools_app.mcp.conftest import with_mcp
from tools_app.models import Invocation
from tools_app.worker.lease import LEASE_PREFIX
from trust_app.services.agents import agent_create, person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

REDIS_DB = 10
RATE_LIMIT = 5
BUDGET = 3
SHORT_TTL = 5

CONFIG: dict[str, Any] = {
    "approval": {
        "rules": [
            # test_bad_output calls wait for people briefly, then expire.
            {"name": "short-lived", "match": {"tool": "test_bad_output"},
             "disposition": "require_approval", "risk_tier": "medium"},
            {"name": "budgeted", "match": {"tool": "test_counter"}, "disposition": "budget",
             "budget": {"limit": BUDGET, "period": "day", "then": "deny"}},
        ],
        "rate_limits": [
            {"name": "cluster-rate", "match": {"tool": "test_echo"}, "per": "agent",
             "max_calls": RATE_LIMIT, "window_seconds": 600},
        ],
        "expiry": {"medium": {"ttl_seconds": SHORT_TTL}},
        "escalate_after_seconds": 1,
    }
}  # fmt: skip


@pytest.fixture(scope="module")
def nodes(test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    with cluster(test_env, root, CONFIG, redis_db=REDIS_DB) as started:
        yield started


@pytest.fixture
def agent() -> Callable[..., tuple[Any, str]]:
    def make(autonomy: str = "full", level: str = "standard") -> tuple[Any, str]:
        created = agent_create(
            name=f"agent-{uuid.uuid4().hex[:10]}", access_level=level, autonomy=autonomy
        )
        return created.agent, created.token

    return make


def _client(base: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=90)


def _operator_token() -> str:
    person = person_create(username=f"op-{uuid.uuid4().hex[:8]}", role="operator", password=None)
    return person_token_issue(person=person)


def test_a_call_waiting_on_node_a_is_approved_on_node_b(
    nodes: Cluster, agent: Callable[..., tuple[Any, str]]
) -> None:
    row, token = agent(autonomy="locked")
    node_a, node_b = nodes.web
    with (
        _client(node_a, token) as on_a,
        _client(node_b, _operator_token()) as operator_on_b,
        concurrent.futures.ThreadPoolExecutor(1) as pool,
    ):
        waiting = pool.submit(
            on_a.post,
            "/api/v1/invocations/",
            json={"tool": "test_echo", "arguments": {"text": "across nodes"}, "wait": 45},
        )
        found: list[dict[str, Any]] = []

        def listed_on_b() -> bool:
            pending = operator_on_b.get("/api/v1/approvals/", params={"status": "pending"})
            found[:] = [r for r in pending.json()["results"] if r["agent"]["name"] == row.name]
            return bool(found)

        wait_until(listed_on_b, timeout=30, what="node B to list the request made on node A")
        decided = operator_on_b.post(
            f"/api/v1/approvals/{found[0]['id']}/decide/", json={"decision": "approve"}
        )
        assert decided.status_code == 200, decided.text
        answer = waiting.result(timeout=60)
    assert answer.status_code in (200, 201), answer.text
    body = answer.json()
    assert body["status"] == "succeeded", body
    assert "across nodes" in body["result"]["content"]


def test_node_b_inbox_hears_of_a_request_made_on_node_a(
    nodes: Cluster, agent: Callable[..., tuple[Any, str]]
) -> None:
    operator = person_create(
        username=f"op-{uuid.uuid4().hex[:8]}", role="operator", password=PASSWORD
    )
    browser = DjangoClient()
    assert browser.login(username=operator.username, password=PASSWORD)
    cookie = f"sessionid={browser.cookies['sessionid'].value}"
    node_a, node_b = nodes.web
    _, token = agent(autonomy="locked")
    url = node_b.replace("http://", "ws://") + "/ws/approvals/?view=inbox"
    with connect(url, additional_headers={"Cookie": cookie}, origin=Origin(node_b)) as socket:
        assert socket.recv(timeout=30), "the inbox state on connect"
        with _client(node_a, token) as on_a:
            created = on_a.post(
                "/api/v1/invocations/", json={"tool": "test_echo", "arguments": {"text": "x"}}
            )
        assert created.status_code == 201, created.text
        request_id = created.json()["approval"]["id"]
        frames: list[str] = []
        while not any(request_id in frame for frame in frames):
            frames.append(str(socket.recv(timeout=30)))
    ApprovalRequest.objects.filter(id=request_id).update(status="cancelled")


def test_the_mcp_gateway_answers_on_either_node(
    nodes: Cluster, agent: Callable[..., tuple[Any, str]]
) -> None:
    _, token = agent()

    async def work(session: Any) -> tuple[list[str], Any]:
        tools = await session.list_tools()
        result = await session.call_tool("test_echo", {"text": "gateway"})
        return [tool.name for tool in tools.tools], result

    for node in nodes.web:
        names, result = with_mcp(node, token, work)
        assert "test_echo" in names
        assert not result.is_error, result
        assert "gateway" in result.content[0].text


def _lease_holder(invocation_id: str, nodes: Cluster) -> dict[str, Any]:
    client = nodes.heartbeats
    wait_until(
        lambda: client.get(LEASE_PREFIX + invocation_id) is not None,
        timeout=60,
        what="a worker to take the call",
    )
    raw = client.get(LEASE_PREFIX + invocation_id)
    assert raw is not None
    return dict(json.loads(raw))


@pytest.mark.parametrize(
    ("tool", "final", "runs"),
    [
        # Not idempotent: it may have written already, so it fails rather than run twice.
        ("test_counter", "failed", 1),
        # Idempotent: another worker runs it again, and it succeeds once.
        ("test_counter_idempotent", "succeeded", 2),
    ],
)
def test_a_worker_killed_mid_call_loses_and_doubles_nothing(
    nodes: Cluster, agent: Callable[..., tuple[Any, str]], tool: str, final: str, runs: int
) -> None:
    row, token = agent()
    with _client(nodes.web[0], token) as on_a:
        created = on_a.post(
            "/api/v1/invocations/", json={"tool": tool, "arguments": {"seconds": 10}}
        )
        assert created.status_code == 201, created.text
        invocation_id = created.json()["id"]
        holder = _lease_holder(invocation_id, nodes)
        counter = Path(row.workspace) / "counter.txt"
        wait_until(counter.exists, timeout=60, what="the tool to start writing")
        killed = nodes.worker_of(int(holder["pid"]))
        nodes.kill_worker(killed)
        try:
            wait_until(
                lambda: (
                    on_a.get(f"/api/v1/invocations/{invocation_id}/").json()["status"]
                    in ("succeeded", "failed")
                ),
                timeout=120,
                what="the call to end",
            )
            done = on_a.get(f"/api/v1/invocations/{invocation_id}/").json()
        finally:
            nodes.restart_worker(killed)
    assert done["status"] == final, (done, nodes.outputs())
    assert counter.read_text().count("run") == runs
    endings = AuditEvent.objects.filter(invocation_id=invocation_id, kind="invocation.finished")
    assert list(endings.values_list("status", flat=True)) == [final]
    retried = AuditEvent.objects.filter(invocation_id=invocation_id, kind="invocation.retried")
    if final == "failed":
        assert done["error"]["code"] == "worker_lost"
        assert endings.get().outcome == "worker_lost"
        assert not retried.exists()
    else:
        assert Invocation.objects.get(id=invocation_id).attempts == 2
        assert retried.count() == 1


def _broker(nodes: Cluster) -> Celery:
    from common.platform.runtime import celery_broker_url
    from synthorg_site.celery import app

    # Not the current app: tasks the rest of the session sends from this process must
    # still go to the session's own broker, not the cluster's.
    sender = Celery(
        "cluster-test", broker=celery_broker_url(nodes.broker_url), set_as_current=False
    )
    sender.conf.task_queues = app.conf.task_queues
    return sender


def test_sweeps_settle_each_request_once_however_many_workers_run_them(
    nodes: Cluster, agent: Callable[..., tuple[Any, str]]
) -> None:
    _, token = agent(autonomy="full")
    ids: list[str] = []
    for index in range(6):
        with _client(nodes.web[index % 2], token) as client:
            created = client.post("/api/v1/invocations/", json={"tool": "test_bad_output"})
        assert created.status_code == 201, created.text
        assert created.json()["status"] == "pending_approval", created.text
        ids.append(created.json()["approval"]["id"])
    sender = _broker(nodes)
    # Beat runs the sweeps; the same sweeps are also sent many times at once, so the
    # three workers run them side by side while the requests fall due.
    deadline = time.monotonic() + SHORT_TTL + 20
    while time.monotonic() < deadline:
        for _ in range(3):
            for name in ("approvals_app.sweep_expired_approvals",
                         "approvals_app.sweep_escalate_approvals"):  # fmt: skip
                sender.send_task(name, queue="maintenance")
        statuses = set(ApprovalRequest.objects.filter(id__in=ids).values_list("status", flat=True))
        if statuses == {"expired"}:
            break
        time.sleep(0.5)
    assert set(ApprovalRequest.objects.filter(id__in=ids).values_list("status", flat=True)) == {
        "expired"
    }
    for request_id in ids:
        for kind in ("approval.expired", "approval.escalated"):
            count = AuditEvent.objects.filter(kind=kind, data__approval=request_id).count()
            assert count <= 1, (kind, request_id, count)
        assert (
            AuditEvent.objects.filter(kind="approval.expired", data__approval=request_id).count()
            == 1
        )
    invocation_ids = ApprovalRequest.objects.filter(id__in=ids).values_list("invocation_id")
    assert set(
        Invocation.objects.filter(id__in=invocation_ids).values_list("status", flat=True)
    ) == {"expired"}


def test_a_rate_limit_holds_across_nodes(
    nodes: Cluster, agent: Callable[..., tuple[Any, str]]
) -> None:
    _, token = agent(autonomy="full")
    attempts = RATE_LIMIT * 2
    clients = [_client(url, token) for url in nodes.web]
    try:
        with concurrent.futures.ThreadPoolExecutor(attempts) as pool:
            answers = list(
                pool.map(
                    lambda n: clients[n % 2].post(
                        "/api/v1/invocations/",
                        json={"tool": "test_echo", "arguments": {"text": "r"}},
                    ),
                    range(attempts),
                )
            )
    finally:
        for client in clients:
            client.close()
    codes = sorted(answer.status_code for answer in answers)
    assert codes.count(201) == RATE_LIMIT, codes
    assert codes.count(429) == attempts - RATE_LIMIT, codes


def test_a_budget_holds_across_nodes(nodes: Cluster, agent: Callable[..., tuple[Any, str]]) -> None:
    _, token = agent(autonomy="supervised")
    attempts = BUDGET * 3
    clients = [_client(url, token) for url in nodes.web]
    try:
        with concurrent.futures.ThreadPoolExecutor(attempts) as pool:
            answers = list(
                pool.map(
                    lambda n: clients[n % 2].post(
                        "/api/v1/invocations/", json={"tool": "test_counter", "arguments": {}}
                    ),
                    range(attempts),
                )
            )
    finally:
        for client in clients:
            client.close()
    assert all(answer.status_code == 201 for answer in answers), [a.text for a in answers]
    statuses = [answer.json()["status"] for answer in answers]
    assert statuses.count("denied") == attempts - BUDGET, statuses
