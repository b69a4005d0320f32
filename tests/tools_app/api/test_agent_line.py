"""An agent's line: at most its cap of calls run at once, the rest wait their turn
(queued, with their place), none is refused for load, and no agent holds back another.

The calls here are `test_gate`: each waits in its sandbox until the test opens the gate
(a file in the agent's workspace), so what runs at once is observed, not timed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit_app.models import AuditEvent
from common.testing import RunningProcess, wait_until
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.mcp.conftest import with_mcp
from tools_app.models import Invocation, InvocationStatus
from trust_app.models import Agent

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _worker(celery_worker_process: RunningProcess) -> RunningProcess:
    return celery_worker_process


def _capped(client: AgentClient, cap: int) -> AgentClient:
    Agent.objects.filter(id=client.agent.id).update(max_concurrent_calls=cap)
    return client


def _open_gate(client: AgentClient) -> None:
    (Path(client.agent.workspace) / "gate.open").touch()


def _count(client: AgentClient, status: str, **extra: Any) -> int:
    return Invocation.objects.filter(agent_id=client.agent.id, status=status, **extra).count()


def _ended(ids: list[str]) -> bool:
    open_statuses = (InvocationStatus.QUEUED, InvocationStatus.RUNNING)
    return not Invocation.objects.filter(id__in=ids, status__in=open_statuses).exists()


def test_calls_beyond_the_cap_wait_their_turn_in_order_and_all_run(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _capped(make_agent(), 2)
    created = [client.call("test_gate", {"seconds": 60}).json() for _ in range(4)]
    assert [c["status"] for c in created[2:]] == ["queued", "queued"]
    assert created[2]["queue"] == {"position": 1, "ahead_for_agent": 2}
    assert created[3]["queue"] == {"position": 2, "ahead_for_agent": 3}
    wait_until(lambda: _count(client, "running") == 2, timeout=60, what="two calls to run")
    # The gate is shut: no slot can free, so the two beyond the cap still wait.
    waiting = [client.get(c["id"]).json() for c in created[2:]]
    assert [w["status"] for w in waiting] == ["queued", "queued"]
    assert [w["queue"]["position"] for w in waiting] == [1, 2]
    assert _count(client, "queued", held=True) == 2
    _open_gate(client)
    ids = [c["id"] for c in created]
    wait_until(lambda: _ended(ids), timeout=90, what="every call to end")
    finals = [client.get(i).json() for i in ids]
    assert [f["status"] for f in finals] == ["succeeded"] * 4, finals
    assert all(f["queue"] is None for f in finals)
    # The waiting calls started in the order they came, each after a slot freed.
    times = {
        str(i): (started, finished)
        for i, started, finished in Invocation.objects.filter(id__in=ids).values_list(
            "id", "started_at", "finished_at"
        )
    }
    ends = [times[i][1] for i in ids[:2]]
    third, fourth = times[ids[2]][0], times[ids[3]][0]
    assert ends[0] is not None and ends[1] is not None
    assert third is not None and fourth is not None
    assert min(ends[0], ends[1]) <= third <= fourth
    for invocation_id in ids:
        finished = AuditEvent.objects.filter(
            invocation_id=invocation_id, kind="invocation.finished"
        )
        assert finished.count() == 1


def test_an_agent_at_its_cap_does_not_hold_back_another(
    make_agent: Callable[..., AgentClient],
) -> None:
    busy = _capped(make_agent(), 2)
    long_calls = [busy.call("test_gate", {"seconds": 60}).json()["id"] for _ in range(3)]
    wait_until(lambda: _count(busy, "running") == 2, timeout=60, what="A at its cap")
    other = make_agent()
    quick = other.call("test_echo", {"text": "through"}, wait=30).json()
    assert quick["status"] == "succeeded", quick
    assert quick["result"]["content"] == "through\n"
    # A's calls are still where they were: two running at its cap, one waiting its turn.
    assert _count(busy, "running") == 2
    assert _count(busy, "queued", held=True) == 1
    _open_gate(busy)
    wait_until(lambda: _ended(long_calls), timeout=90, what="A's calls to end")
    assert _count(busy, "succeeded") == 3


def test_a_cancelled_waiting_call_never_runs_and_the_line_moves_on(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _capped(make_agent(), 1)
    running = client.call("test_gate", {"seconds": 60}).json()
    withdrawn = client.call("test_gate", {"seconds": 60}).json()
    last = client.call("test_gate", {"seconds": 60}).json()
    assert last["queue"] == {"position": 2, "ahead_for_agent": 2}
    cancelled = client.http.post(f"/api/v1/invocations/{withdrawn['id']}/cancel/").json()
    assert cancelled["status"] == "cancelled"
    assert client.get(last["id"]).json()["queue"] == {"position": 1, "ahead_for_agent": 1}
    _open_gate(client)
    ids = [running["id"], last["id"]]
    wait_until(lambda: _ended(ids), timeout=90, what="the calls to end")
    assert [client.get(i).json()["status"] for i in ids] == ["succeeded", "succeeded"]
    assert Invocation.objects.get(id=withdrawn["id"]).started_at is None


def test_the_cap_holds_over_mcp_and_a_call_beyond_it_waits_then_answers(
    make_agent: Callable[..., AgentClient], daphne_server: str
) -> None:
    client = _capped(make_agent(), 1)

    async def two_calls(session: Any) -> list[Any]:
        first = asyncio.ensure_future(session.call_tool("test_gate", {"seconds": 60}))
        second = asyncio.ensure_future(session.call_tool("test_gate", {"seconds": 60}))
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(
            None,
            lambda: wait_until(
                lambda: _count(client, "running") == 1 and _count(client, "queued", held=True) == 1,
                timeout=60,
                what="one call running and one waiting",
            ),
        )
        _open_gate(client)
        return list(await asyncio.gather(first, second))

    results = with_mcp(daphne_server, client.token, two_calls)
    assert [r.is_error for r in results] == [False, False], results
    assert all("passed" in r.content[0].text for r in results)


def test_two_hundred_waiting_calls_run_at_once_on_one_worker_process(
    make_agent: Callable[..., AgentClient],
) -> None:
    """A call that waits on its sandbox holds no worker process: 200 of them (50
    agents at a cap of 4) all run at once on the session's single worker process."""
    clients = [_capped(make_agent(), 4) for _ in range(50)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        created = list(
            pool.map(
                lambda c: [c.call("test_gate", {"seconds": 60}).json()["id"] for _ in range(4)],
                clients,
            )
        )
    ids = [i for per_agent in created for i in per_agent]
    agent_ids = [c.agent.id for c in clients]
    running = Invocation.objects.filter(agent_id__in=agent_ids, status=InvocationStatus.RUNNING)
    wait_until(lambda: running.count() == 200, timeout=120, what="all 200 calls running")
    workers = set(running.values_list("worker", flat=True))
    assert len(workers) == 1, workers
    for client in clients:
        _open_gate(client)
    wait_until(lambda: _ended(ids), timeout=120, what="every call to end")
    statuses = Invocation.objects.filter(id__in=ids).values_list("status", flat=True)
    assert set(statuses) == {InvocationStatus.SUCCEEDED}
    assert AuditEvent.objects.filter(invocation_id__in=ids, kind="invocation.finished").count() == (
        200
    )
