"""PostgreSQL restarts under load: two web nodes, two workers and beat on a PostgreSQL
cluster of this test's own (the suite's is never restarted: other tests use it at the
same time) and a TCP Redis of their own, with agents calling all along. PostgreSQL
is stopped twice for a few seconds, once ``fast`` (every session ended at once) and
once ``immediate`` (as a crash, recovered from its WAL), each while calls are in
flight (two of them running in their sandboxes across the outage) and while a person
decides approvals; then once more between requests, after a burst left the nodes'
pools holding many idle connections.

Asserted: every call reaches its end (a call queued during the outage runs once the
database is back), none ran twice, none is reported as a worker's death (no worker
died), the record matches the runs, clients saw only JSON (503 with Retry-After in
the envelope during the outage), /healthz names the database while it is away, and
after the restart between requests each node's first request finds the database up
(its pool dropped every dead connection at once). Seconds until healthy are printed.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection

from common.testing import wait_until
from tests.support.cluster import Cluster, cluster
from tests.support.faults import (
    ASKS_A_PERSON_RULE,
    Approvals,
    Fault,
    Load,
    OwnPostgres,
    OwnRedis,
    calls_in_flight,
    connections_to,
    database_of,
    migrate,
    record_check,
    wait_healthy,
)
from tools_app.models import Invocation
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CLIENTS = 4
# Each outage, and the load before each (seconds).
OUTAGE = 3.0
BETWEEN = 4.0
SETTLE_SECONDS = 120

CONFIG: dict[str, Any] = {
    "approval": {
        "rules": [
            ASKS_A_PERSON_RULE,
        ]
    }
}  # fmt: skip


@pytest.fixture
def own_console(
    test_env: dict[str, str], tmp_path: Path, settings: Any
) -> Iterator[tuple[Cluster, OwnPostgres]]:
    """The console's processes on a PostgreSQL and a Redis of their own, and this test's
    ORM on the same database (its agents, tokens and reads are there)."""
    with ExitStack() as stack:
        postgres = OwnPostgres()
        stack.callback(postgres.remove)
        postgres.create()
        redis_server = OwnRedis(tmp_path)
        stack.callback(redis_server.stop)
        redis_server.start()
        # Checkpoints of this database's chain stay apart from the suite's var/.
        checkpoints = str(tmp_path / "checkpoints")
        settings.SYNTHORG_AUDIT_CHECKPOINT_DIR = checkpoints
        env = dict(
            test_env, DATABASE_URL=postgres.url, REDIS_URL=redis_server.url,
            SYNTHORG_AUDIT_CHECKPOINT_DIR=checkpoints, SYNTHORG_HEARTBEAT_MAX_AGE="4",
            SYNTHORG_HEARTBEAT_INTERVAL="1",
        )  # fmt: skip
        migrate(env)
        stack.enter_context(database_of(postgres.url))
        with connection.cursor() as cursor:
            cursor.execute("SELECT inet_server_port()")
            assert cursor.fetchone() == (postgres.port,), "the test's ORM is on its own cluster"
        nodes = stack.enter_context(
            cluster(env, tmp_path, CONFIG, redis_db=None, web_nodes=2, workers=2)
        )
        yield nodes, postgres


class Restarts:
    """PostgreSQL stopped for a few seconds and started again while the load runs."""

    def __init__(
        self, nodes: Cluster, postgres: OwnPostgres, approvals: Approvals, load: Load,
        long_token: str,
    ) -> None:  # fmt: skip
        self.long_token = long_token
        self.nodes = nodes
        self.postgres = postgres
        self.approvals = approvals
        self.load = load
        self.done: list[Fault] = []
        self.health_while_away: list[dict[str, Any]] = []
        self.first_health_after: list[dict[str, Any]] = []
        self.idle_connections: list[int] = []
        self.submits_while_away: list[httpx.Response] = []
        self.probe_token, self.busy_token = (
            agent_create(name=f"{role}-{uuid.uuid4().hex[:8]}", access_level="elevated",
                         autonomy="full").token
            for role in ("probe", "busy")
        )  # fmt: skip

    def under_load(self, mode: str) -> None:
        """Stopped (``mode``) for a few seconds under the load, while a person decides:
        one request as PostgreSQL goes down, one while it is away (each asked again
        after a 503 until it is decided)."""
        self.approvals.ask()
        self.approvals.ask()
        time.sleep(BETWEEN)
        self.long_calls()
        fault = Fault(f"postgresql stopped ({mode}) for {OUTAGE:g}s", in_flight=calls_in_flight())
        deciding = threading.Thread(
            target=self.approvals.decide_all, args=(self.nodes.web[1],), kwargs={"patience": 120}
        )
        deciding.start()
        self.postgres.stop(mode)
        try:
            # /healthz answers while the database is away, and names it.
            answer = httpx.get(self.nodes.web[0] + "/healthz", timeout=30)
            self.health_while_away.append({**answer.json(), "http": answer.status_code})
            # A call asked for now is answered as an outage (the load's clients may all
            # be waiting on calls they sent before, with nothing to ask the database).
            self.submits_while_away.append(self.submit_now())
            time.sleep(OUTAGE)
        finally:
            self.postgres.start()
        back = time.monotonic()
        fault.to_healthy = wait_healthy(self.nodes.web, self.probe_token)
        deciding.join(timeout=150)
        assert not deciding.is_alive(), "the approvals were not decided"
        self.done.append(fault)
        late = max(0.0, self.load.last_503 - back)
        print(f"{fault.name}: clients were answered 503 until {late:.1f}s after it was back")

    def submit_now(self) -> httpx.Response:
        return httpx.post(
            self.nodes.web[1] + "/api/v1/invocations/",
            headers={"Authorization": f"Bearer {self.probe_token}"},
            json={"tool": "test_echo", "arguments": {"text": "while away"}},
            timeout=60,
        )

    def long_calls(self) -> None:
        """Two calls whose sandboxes run across the outage: each ends once the database
        is back, with its own outcome."""
        started = []
        with httpx.Client(headers={"Authorization": f"Bearer {self.long_token}"}) as http:
            for _ in range(2):
                marker = f"long-{uuid.uuid4().hex[:12]}"
                answer = http.post(
                    self.nodes.web[0] + "/api/v1/invocations/",
                    json={"tool": "test_counter",
                          "arguments": {"text": marker, "seconds": OUTAGE + 2}},
                )  # fmt: skip
                assert answer.status_code == 201, answer.text
                self.load.add(marker, answer.json()["id"])
                started.append(answer.json()["id"])
        running = Invocation.objects.filter(id__in=started, status="running")
        wait_until(lambda: running.count() == 2, timeout=60, what="the long calls to run")

    def between_requests(self) -> None:
        """Restarted (fast) while the nodes serve nothing, after a burst left their pools
        holding many idle connections, all dead after the restart: the first request
        each node serves after it finds the database up."""
        self.fill_pools()
        wait_until(lambda: calls_in_flight() == 0, timeout=120, what="the burst's calls to end")
        self.idle_connections = [
            connections_to(web.process.pid, self.postgres.port) for web in self.nodes.web_processes
        ]
        fault = Fault("postgresql restarted (fast), pools idle", in_flight=calls_in_flight())
        self.postgres.stop("fast")
        self.postgres.start()
        for node in self.nodes.web:
            self.first_health_after.append(httpx.get(node + "/healthz", timeout=30).json())
        fault.to_healthy = wait_healthy(self.nodes.web, self.probe_token)
        self.done.append(fault)

    def fill_pools(self) -> None:
        """Many calls at once on each node: its pool grows, as on a busy console."""

        def calls(node: str) -> None:
            headers = {"Authorization": f"Bearer {self.busy_token}"}
            call = {"tool": "test_echo", "arguments": {"text": "busy"}}
            with httpx.Client(timeout=30, headers=headers) as http:
                for _ in range(3):
                    http.post(node + "/api/v1/invocations/", json=call)

        threads = [threading.Thread(target=calls, args=(n,)) for n in self.nodes.web * 16]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)


def test_every_call_ends_once_while_postgresql_restarts(
    own_console: tuple[Cluster, OwnPostgres],
) -> None:
    nodes, postgres = own_console
    agents = [
        agent_create(name=f"load-{uuid.uuid4().hex[:8]}", access_level="elevated", autonomy="full")
        for _ in range(CLIENTS)
    ]
    long = agent_create(
        name=f"long-{uuid.uuid4().hex[:8]}", access_level="elevated", autonomy="full"
    )
    workspaces = [Path(a.agent.workspace) for a in [*agents, long]]
    approvals = Approvals(nodes.web)
    with Load(nodes.web, [a.token for a in agents]) as load:
        restarts = Restarts(nodes, postgres, approvals, load, long.token)
        time.sleep(BETWEEN)
        restarts.under_load("fast")
        restarts.under_load("immediate")
        time.sleep(BETWEEN)
    restarts.between_requests()
    endings = record_check(
        load, approvals, workspaces, restarts.done, settle_seconds=SETTLE_SECONDS,
        logs=lambda: nodes.outputs() + postgres.log_tail(),
    )  # fmt: skip
    assert len(load.ids) > 30, f"too little load to judge: {len(load.ids)} calls"
    # Nothing failed: no worker died, and a database away is not a worker's death.
    assert set(endings) == {("succeeded", "")}, endings
    assert approvals.decided and not approvals.undecided
    # The outage was seen, and answered as one: 503 with Retry-After, in the envelope
    # (the load's clients retry theirs: how many met it is in the printed record).
    assert len(restarts.submits_while_away) == 2
    for refused in restarts.submits_while_away:
        assert refused.status_code == 503, refused.text
        assert refused.headers.get("Retry-After"), refused.headers
        assert refused.json()["error"]["code"] == "unavailable", refused.text
    print("load clients answered 503:", dict(load.retries))
    for health in restarts.health_while_away:
        assert health["http"] == 503, health
        assert "database" in health["failing"], health
    # Each node's pool held several connections when PostgreSQL restarted between
    # requests (all dead after it), and its first request after found the database up:
    # the dead ones were dropped at once, not one pause each.
    print("connections of each node before the restart between requests:",
          restarts.idle_connections)  # fmt: skip
    assert min(restarts.idle_connections) >= 3, restarts.idle_connections
    for health in restarts.first_health_after:
        assert health["parts"]["database"]["ok"], health
