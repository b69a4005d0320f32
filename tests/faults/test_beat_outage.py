"""Beat stopped for two full minutes under a light load, while a worker is killed in the
middle of a call: two web nodes, two workers on the suite's PostgreSQL and a TCP Redis
of their own.

While beat is away /healthz says ``degraded`` and names it, and what beat does stops:
the call whose worker died stays ``running``, an approval past its time stays
``pending``, no audit checkpoint is written. Calls and approvals decided meanwhile
still run. Once beat is back it catches up: the orphaned call settles (failed, its
tool is not idempotent), the approval expires (its call never runs), a checkpoint is
written, and /healthz is ok again. Every call of the load ends once and the record
matches the runs (tests/support/faults.record_check).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.utils import timezone

from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent
from common.testing import wait_until
from tests.support.cluster import Cluster, cluster
from tests.support.faults import (
    ASKS_A_PERSON_RULE,
    Approvals,
    Fault,
    Load,
    OwnRedis,
    calls_in_flight,
    marker_runs,
    record_check,
    wait_healthy,
)
from tools_app.models import Invocation
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# A light load: each client calls, then pauses this long (seconds).
CLIENTS = 2
PAUSE = 0.5
BEAT_AWAY = 120.0
# Beat's absence shows on /healthz this soon (the cluster's heartbeat maximum age).
HEARTBEAT_MAX_AGE = 4.0
CHECKPOINT_SECONDS = 10
# A request waits this long for a person, then expires (when beat sweeps).
APPROVAL_TTL = 30
CATCH_UP_SECONDS = 90
SETTLE_SECONDS = 120

CONFIG: dict[str, Any] = {
    "approval": {
        "rules": [
            ASKS_A_PERSON_RULE,
        ],
        "expiry": {"medium": {"ttl_seconds": APPROVAL_TTL, "on_expiry": "expire"}},
    }
}  # fmt: skip


@pytest.fixture
def console(test_env: dict[str, str], tmp_path: Path, settings: Any) -> Iterator[Cluster]:
    """Two web nodes, two workers and beat, checkpoints every few seconds into a store
    of this test's own."""
    own = OwnRedis(tmp_path)
    own.start()
    checkpoints = str(tmp_path / "checkpoints")
    settings.SYNTHORG_AUDIT_CHECKPOINT_DIR = checkpoints
    env = dict(
        test_env, REDIS_URL=own.url, SYNTHORG_HEARTBEAT_MAX_AGE=str(HEARTBEAT_MAX_AGE),
        SYNTHORG_HEARTBEAT_INTERVAL="1", SYNTHORG_AUDIT_CHECKPOINT_SECONDS=str(CHECKPOINT_SECONDS),
        SYNTHORG_AUDIT_CHECKPOINT_DIR=checkpoints,
    )  # fmt: skip
    try:
        with cluster(env, tmp_path, CONFIG, redis_db=None, web_nodes=2, workers=2) as started:
            yield started
    finally:
        own.stop()


def _checkpoints(directory: Path) -> set[str]:
    return {name for name in os.listdir(directory) if name.endswith(".json")}


def _health(web: list[str]) -> list[tuple[int, dict[str, Any]]]:
    answers = [httpx.get(node + "/healthz", timeout=30) for node in web]
    return [(answer.status_code, answer.json()) for answer in answers]


def _caught_up(checks: dict[str, Callable[[], bool]], *, since: float) -> dict[str, float]:
    """Seconds from ``since`` until each check first held (each checked every half second)."""
    seconds: dict[str, float] = {}

    def all_held() -> bool:
        for what, check in checks.items():
            if what not in seconds and check():
                seconds[what] = time.monotonic() - since
        return len(seconds) == len(checks)

    wait_until(all_held, timeout=CATCH_UP_SECONDS, what=f"beat to catch up ({seconds})", poll=0.5)
    return seconds


def test_beat_away_for_two_minutes_is_shown_and_caught_up(console: Cluster, settings: Any) -> None:
    nodes = console
    store = Path(settings.SYNTHORG_AUDIT_CHECKPOINT_DIR)
    agents = [
        agent_create(name=f"load-{uuid.uuid4().hex[:8]}", access_level="elevated", autonomy="full")
        for _ in range(CLIENTS)
    ]
    orphaned_by = agent_create(
        name=f"orphan-{uuid.uuid4().hex[:8]}", access_level="elevated", autonomy="full"
    )
    probe = agent_create(
        name=f"probe-{uuid.uuid4().hex[:8]}", access_level="elevated", autonomy="full"
    )
    approvals = Approvals(nodes.web)
    with Load(nodes.web, [a.token for a in agents], pause=PAUSE) as load:
        # Controls: with beat running, /healthz is ok and checkpoints are written.
        wait_healthy(nodes.web, probe.token)
        wait_until(lambda: store.is_dir() and bool(_checkpoints(store)), timeout=90,
                   what="a first checkpoint while beat runs")  # fmt: skip
        # A long call, running when its worker dies.
        with httpx.Client(headers={"Authorization": f"Bearer {orphaned_by.token}"}) as http:
            orphan_id = http.post(
                nodes.web[0] + "/api/v1/invocations/",
                json={"tool": "test_counter", "arguments": {"text": "orphan", "seconds": 60}},
            ).json()["id"]
        orphan = Invocation.objects.filter(id=orphan_id)
        wait_until(lambda: orphan.filter(status="running").exists(), timeout=60,
                   what="the long call to run")  # fmt: skip
        # Two requests wait for a person: one is decided while beat is away, the other
        # is left to run out its time.
        approvals.ask()
        with httpx.Client(headers={"Authorization": f"Bearer {approvals.agent_token}"}) as http:
            left = http.post(
                nodes.web[1] + "/api/v1/invocations/",
                json={"tool": "test_counter_idempotent", "arguments": {"text": "left"}},
            ).json()
        assert left["status"] == "pending_approval", left
        left_request = ApprovalRequest.objects.filter(id=left["approval"]["id"])

        fault = Fault(f"beat stopped for {BEAT_AWAY:g}s, a worker killed mid-call",
                      in_flight=calls_in_flight())  # fmt: skip
        nodes.kill_beat()
        away = time.monotonic()
        dying = nodes.worker_names.index(orphan.get().worker)
        nodes.kill_worker(dying)
        nodes.restart_worker(dying)
        wait_until(
            lambda: all("beat" in body["degraded"] for _, body in _health(nodes.web)),
            timeout=HEARTBEAT_MAX_AGE * 4, what="/healthz to say beat is away",
        )  # fmt: skip
        # Anything beat sent before it died has been done by now.
        time.sleep(CHECKPOINT_SECONDS)
        before = _checkpoints(store)
        approvals.decide_all(nodes.web[0])
        health_while_away = []
        while time.monotonic() - away < BEAT_AWAY:
            health_while_away.extend(_health(nodes.web))
            time.sleep(10)
        # What beat does stopped with it.
        still_running = orphan.get().status
        left_while_away = left_request.get()
        read_at = timezone.now()
        new_while_away = _checkpoints(store) - before
        decided = Invocation.objects.filter(id__in=list(approvals.asked.values()))
        decided_while_away = set(decided.values_list("status", flat=True))

        nodes.restart_beat()
        back = time.monotonic()
        catch_up = _caught_up(
            {
                "healthz ok": lambda: all(b["status"] == "ok" for _, b in _health(nodes.web)),
                "orphaned call settled": lambda: orphan.get().status == "failed",
                "approval expired": lambda: left_request.get().status == "expired",
                "checkpoint written": lambda: bool(_checkpoints(store) - before),
            },
            since=back,
        )
        fault.to_healthy = catch_up["healthz ok"]
        wait_healthy(nodes.web, probe.token)  # and a new call runs end to end
    print(  # the figures of the catch-up, for whoever reads the test's output
        "after beat was back: "
        + ", ".join(f"{what} in {seconds:.1f}s" for what, seconds in catch_up.items())
    )
    record_check(
        load, approvals, [Path(a.agent.workspace) for a in agents], [fault],
        settle_seconds=SETTLE_SECONDS, logs=nodes.outputs,
    )  # fmt: skip
    assert len(load.ids) > 10, f"too little load to judge: {len(load.ids)} calls"

    # While beat was away, /healthz answered 200 degraded, naming beat, on every node.
    assert len(health_while_away) >= 2 * 5, health_while_away
    for status, body in health_while_away:
        assert status == 200, body
        assert body["status"] == "degraded" and body["degraded"] == ["beat"], body
        assert "beat" in body["message"], body
    # ... the orphaned call stayed running, the approval past its time stayed pending,
    # no checkpoint was written, and the approval decided meanwhile ran.
    assert still_running == "running"
    assert left_while_away.status == "pending"
    assert left_while_away.expires_at < read_at - timedelta(seconds=BEAT_AWAY / 2)
    assert new_while_away == set()
    assert decided_while_away == {"succeeded"}
    # Caught up: the orphan failed as its worker's death (run once, never again), the
    # approval expired without its call running, each ended with one record.
    settled = orphan.get()
    assert (settled.status, settled.error_code) == ("failed", "worker_lost")
    assert marker_runs(Path(orphaned_by.agent.workspace))["orphan"] == 1
    assert Invocation.objects.get(id=left["id"]).status == "expired"
    assert marker_runs(approvals.workspace)["left"] == 0
    for invocation_id in (orphan_id, left["id"]):
        finished = AuditEvent.objects.filter(
            invocation_id=invocation_id, kind="invocation.finished"
        )
        assert finished.count() <= 1
    assert AuditEvent.objects.filter(invocation_id=orphan_id, kind="invocation.finished").count()
