"""Faults under load: two web nodes, two workers and beat on the suite's PostgreSQL and a
TCP Redis of their own (append-only), with agents calling all along while the test kills
and restarts each part: a worker, a web node, Redis and beat, and people decide
approvals during each outage. PostgreSQL's restart has a module of its own
(test_postgres_restart.py, on a PostgreSQL of its own), and so has beat stopped for
minutes (test_beat_outage.py).

Every call is counted to its end and the record is compared with what ran: each call
the agents made reached a final state; each that succeeded ran exactly once (its
marker line in its workspace) and none ran twice; each ended with exactly one
``invocation.finished`` audit row; every approval decided ran its call once; the
audit chain verifies (tests/support/faults.record_check).
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.testing import wait_until
from tests.support.cluster import Cluster, cluster
from tests.support.faults import (
    ASKS_A_PERSON_RULE,
    Approvals,
    Fault,
    Load,
    OwnRedis,
    calls_in_flight,
    record_check,
    wait_healthy,
)
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CLIENTS = 6
# Each fault's outage, and the load between faults (seconds).
OUTAGE = 3.0
BETWEEN = 3.0
SETTLE_SECONDS = 120
# Beat's absence shows on /healthz this soon (the cluster's heartbeat maximum age).
HEARTBEAT_MAX_AGE = 4.0

CONFIG: dict[str, Any] = {
    "approval": {
        "rules": [
            ASKS_A_PERSON_RULE,
        ]
    }
}  # fmt: skip


@contextlib.contextmanager
def _console(test_env: dict[str, str], root: Path) -> Iterator[tuple[Cluster, OwnRedis]]:
    own = OwnRedis(root)
    own.start()
    try:
        env = dict(
            test_env, REDIS_URL=own.url, SYNTHORG_HEARTBEAT_MAX_AGE=str(HEARTBEAT_MAX_AGE),
            SYNTHORG_HEARTBEAT_INTERVAL="1",
        )  # fmt: skip
        with cluster(env, root, CONFIG, redis_db=None, web_nodes=2, workers=2) as started:
            yield started, own
    finally:
        own.stop()


class Faults:
    """Each part killed or stopped in turn while the load runs."""

    def __init__(self, nodes: Cluster, own: OwnRedis, approvals: Approvals) -> None:
        self.nodes = nodes
        self.own = own
        self.approvals = approvals
        self.done: list[Fault] = []
        probe = agent_create(
            name=f"probe-{uuid.uuid4().hex[:8]}", access_level="elevated", autonomy="full"
        )
        self.probe_token = probe.token

    def run(self) -> list[Fault]:
        nodes = self.nodes
        self.outage(
            "worker 0 killed", lambda: nodes.kill_worker(0), lambda: nodes.restart_worker(0)
        )
        self.outage("web node 0 killed", lambda: nodes.kill_web(0), lambda: nodes.restart_web(0))
        self.outage("redis restarted", self.own.stop, self.own.start)
        self.outage("beat killed", self.beat_away, nodes.restart_beat)
        return self.done

    def outage(self, name: str, stop: Callable[[], None], start: Callable[[], None]) -> None:
        self.approvals.ask()
        time.sleep(BETWEEN)
        fault = Fault(name, in_flight=calls_in_flight())
        stop()
        # A person decides while the part is away (asking again after a 503).
        deciding = threading.Thread(
            target=self.approvals.decide_all, args=(self.nodes.web[1],), kwargs={"patience": 90}
        )
        try:
            deciding.start()
            time.sleep(OUTAGE)
        finally:
            start()
        fault.to_healthy = wait_healthy(self.nodes.web, self.probe_token)
        deciding.join(timeout=120)
        self.done.append(fault)

    def beat_away(self) -> None:
        """Beat killed: /healthz turns degraded (never 200 "ok") while it is away."""
        self.nodes.kill_beat()

        def degraded() -> bool:
            body = httpx.get(self.nodes.web[0] + "/healthz", timeout=5).json()
            return bool(body["status"] == "degraded" and "beat" in body["degraded"])

        wait_until(degraded, timeout=HEARTBEAT_MAX_AGE * 4, what="/healthz to say beat is away")


def test_every_call_ends_once_while_each_part_is_killed_and_restarted(
    test_env: dict[str, str], tmp_path: Path
) -> None:
    agents = [
        agent_create(name=f"load-{uuid.uuid4().hex[:8]}", access_level="elevated", autonomy="full")
        for _ in range(CLIENTS)
    ]
    workspaces = [Path(a.agent.workspace) for a in agents]
    with _console(test_env, tmp_path) as (nodes, own):
        approvals = Approvals(nodes.web)
        with Load(nodes.web, [a.token for a in agents]) as load:
            time.sleep(BETWEEN)
            done = Faults(nodes, own, approvals).run()
        assert [f.name for f in done] == [
            "worker 0 killed", "web node 0 killed", "redis restarted", "beat killed",
        ]  # fmt: skip
        record_check(
            load, approvals, workspaces, done, settle_seconds=SETTLE_SECONDS, logs=nodes.outputs
        )
    assert len(load.ids) > 50, f"too little load to judge: {len(load.ids)} calls"
