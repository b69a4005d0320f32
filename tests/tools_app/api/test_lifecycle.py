"""Cancel, worker death and batches: every call ends terminal, and runs at most once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from audit_app.models import AuditEvent
from common.platform.redis import redis_client
from common.testing import RunningProcess, wait_until
from tests.tools_app.api.conftest import AgentClient
from tools_app.models import Invocation
from tools_app.worker.lease import LEASE_PREFIX

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _worker(celery_worker_process: RunningProcess) -> RunningProcess:
    return celery_worker_process


def _runs(client: AgentClient) -> int:
    counter = Path(client.agent.workspace) / "counter.txt"
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def _status(invocation_id: str) -> str:
    return str(Invocation.objects.values_list("status", flat=True).get(id=invocation_id))


def test_cancel_while_queued_never_runs(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    batch = client.http.post(
        "/api/v1/invocations/batch/",
        json={
            "calls": [
                {"tool": "test_counter", "arguments": {"seconds": 2}},
                {"tool": "test_counter", "arguments": {"seconds": 0}},
            ],
            "max_concurrency": 1,
        },
    ).json()["invocations"]
    held = batch[1]
    assert held["status"] == "queued"
    cancelled = client.http.post(f"/api/v1/invocations/{held['id']}/cancel/").json()
    assert cancelled["status"] == "cancelled"
    first = client.get(batch[0]["id"], wait=30).json()
    assert first["status"] == "succeeded"
    assert client.get(held["id"]).json()["status"] == "cancelled"
    assert _runs(client) == 1
    assert AuditEvent.objects.filter(invocation_id=held["id"], kind="invocation.cancelled").exists()


def test_cancel_while_running_discards_the_result(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    created = client.call("test_counter", {"seconds": 3}).json()
    wait_until(lambda: _status(created["id"]) == "running", timeout=30, what="the call to start")
    body = client.http.post(f"/api/v1/invocations/{created['id']}/cancel/").json()
    assert body["status"] == "cancelled"
    wait_until(lambda: _runs(client) == 1, timeout=30, what="the tool's side effect")
    wait_until(
        lambda: redis_client().get(LEASE_PREFIX + created["id"]) is None,
        timeout=30,
        what="the worker to finish the call",
    )
    final = client.get(created["id"]).json()
    assert final["status"] == "cancelled"
    assert final["result"] is None


def test_cancelling_a_finished_call_changes_nothing(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    done = client.call("test_echo", {"text": "x"}, wait=30).json()
    again = client.http.post(f"/api/v1/invocations/{done['id']}/cancel/").json()
    assert again["status"] == "succeeded"


# A worker killed mid-call (its whole process: calls run in its threads) is the cluster
# suite's case: tests/cluster/test_multi_node.py kills one under beat's sweeps.


def test_a_batch_keeps_each_calls_failure_to_itself(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent(denied=["test_privileged"])
    body = client.http.post(
        "/api/v1/invocations/batch/",
        json={
            "calls": [
                {"tool": "test_echo", "arguments": {"text": "one"}},
                {"tool": "test_echo", "arguments": {"text": 5}},
                {"tool": "nope", "arguments": {}},
                {"tool": "test_bad_output", "arguments": {}},
                {"tool": "test_privileged", "arguments": {}},
                {"tool": "test_echo", "arguments": {"text": "two"}},
            ],
            "max_concurrency": 2,
            "wait": 30,
        },
    )
    assert body.status_code == 200
    entries = body.json()["invocations"]
    assert [e["status"] for e in entries] == [
        "succeeded",
        "failed",
        "failed",
        "failed",
        "denied",
        "succeeded",
    ]
    assert [e["error"]["code"] if e["error"] else None for e in entries] == [
        None,
        "invalid_argument",
        "not_found",
        "output_invalid",
        "denied",
        None,
    ]
    assert entries[1]["id"] is None and entries[3]["id"] is not None
    assert entries[0]["result"]["content"] == "one\n"
    assert entries[5]["result"]["content"] == "two\n"
