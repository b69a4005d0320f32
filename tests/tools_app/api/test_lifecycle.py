"""Cancel, worker death and batches: every call ends terminal, and runs at most once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from audit_app.models import AuditEvent
from common.testing import RunningProcess, wait_until
from tests.tools_app.api.conftest import AgentClient
from tools_app.models import Invocation

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


def test_a_cancel_while_running_keeps_the_outcome_and_the_result(
    make_agent: Callable[..., AgentClient],
) -> None:
    """Its effect may have happened already: the record never says "cancelled" of it."""
    client = make_agent()
    created = client.call("test_counter", {"seconds": 3}).json()
    wait_until(lambda: _status(created["id"]) == "running", timeout=30, what="the call to start")
    body = client.http.post(f"/api/v1/invocations/{created['id']}/cancel/").json()
    assert body["status"] == "running"
    again = client.http.post(f"/api/v1/invocations/{created['id']}/cancel/").json()
    assert again["status"] == "running"
    final = client.get(created["id"], wait=30).json()
    assert final["status"] == "succeeded", final
    assert final["result"]["content"].endswith("done\n")
    assert _runs(client) == 1
    requested = AuditEvent.objects.filter(
        invocation_id=created["id"], kind="invocation.cancel_requested"
    )
    assert requested.count() == 1 and requested.get().outcome == "too_late"
    finished = AuditEvent.objects.filter(invocation_id=created["id"], kind="invocation.finished")
    assert list(finished.values_list("status", flat=True)) == ["succeeded"]
    assert not AuditEvent.objects.filter(
        invocation_id=created["id"], kind="invocation.cancelled"
    ).exists()
    assert Invocation.objects.get(id=created["id"]).cancel_requested_at is not None


def test_a_cancel_racing_the_start_either_stops_the_call_or_keeps_its_outcome(
    make_agent: Callable[..., AgentClient],
) -> None:
    """Cancels sent 0 to 0.7 s after the call: each record agrees with the workspace."""
    client = make_agent()
    ids = []
    for delay in (0.0, 0.05, 0.1, 0.2, 0.3, 0.45, 0.7):
        created = client.call("test_counter", {"seconds": 0}).json()
        time.sleep(delay)
        client.http.post(f"/api/v1/invocations/{created['id']}/cancel/")
        ids.append(created["id"])
    finals = [client.get(i, wait=30).json() for i in ids]
    assert all(f["status"] in ("cancelled", "succeeded") for f in finals), finals
    ran = [f for f in finals if f["status"] == "succeeded"]
    assert all(f["result"] is not None for f in ran)
    assert all(f["result"] is None for f in finals if f["status"] == "cancelled")
    # One line in the workspace per call that ran, none for a call recorded cancelled.
    assert _runs(client) == len(ran)
    for invocation_id in ids:
        endings = AuditEvent.objects.filter(
            invocation_id=invocation_id, kind__in=("invocation.finished", "invocation.cancelled")
        )
        assert endings.count() == 1


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
