"""Faults under load: two web nodes, two workers and beat on the suite's PostgreSQL and a
TCP Redis of their own (append-only), with agents calling all along while the test kills
and restarts each part: a worker, a web node, Redis and beat, and people decide
approvals during each outage.

Every call is counted to its end and the record is compared with what ran: each call
the agents made reached a final state; each that succeeded ran exactly once (its
marker line in its workspace) and none ran twice; each ended with exactly one
``invocation.finished`` audit row; every approval decided ran its call once; the
audit chain verifies.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import InterfaceError, OperationalError, close_old_connections, connections

from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent
from audit_app.verify import audit_chain_verify
from common.testing import wait_until
from tests.support.cluster import Cluster, cluster
from tests.support.faults import OwnRedis
from tools_app.models import Invocation
from trust_app.services.agents import agent_create, person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CLIENTS = 6
# Each fault's outage, and the load between faults (seconds).
OUTAGE = 3.0
BETWEEN = 3.0
SETTLE_SECONDS = 120
# Beat's absence shows on /healthz this soon (the cluster's heartbeat maximum age).
HEARTBEAT_MAX_AGE = 4.0
FINAL = {"succeeded", "failed", "timed_out", "cancelled", "denied", "expired"}

CONFIG: dict[str, Any] = {
    "approval": {
        "rules": [
            {"name": "asks-a-person", "match": {"tool": "test_counter_idempotent"},
             "disposition": "require_approval", "risk_tier": "medium"},
        ]
    }
}  # fmt: skip


class Load:
    """Agents calling test_counter in a closed loop across both web nodes.

    Each call carries a marker (its idempotency key too): a client that loses its
    answer (a node killed, an outage) asks again with the same key, on the other node,
    until it gets one, as a careful client does.
    """

    def __init__(self, web: list[str], tokens: list[str]) -> None:
        self.web = web
        self.tokens = tokens
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.ids: dict[str, str] = {}  # marker -> invocation id
        self.unanswered: set[str] = set()  # markers never answered with an id
        self.retries: collections.Counter[str] = collections.Counter()
        self.threads = [threading.Thread(target=self._client, args=(t,)) for t in tokens]

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=120)

    def _client(self, token: str) -> None:
        nodes = itertools.cycle(self.web)
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(headers=headers, timeout=httpx.Timeout(20, connect=3)) as http:
            while not self.stop.is_set():
                marker = f"m-{uuid.uuid4().hex[:16]}"
                body = {"tool": "test_counter", "arguments": {"text": marker},
                        "idempotency_key": marker, "wait": 10}  # fmt: skip
                with self.lock:
                    self.unanswered.add(marker)
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    node = next(nodes)
                    try:
                        answer = http.post(f"{node}/api/v1/invocations/", json=body)
                    except httpx.HTTPError as exc:
                        self.retries[type(exc).__name__] += 1
                        time.sleep(0.3)
                        continue
                    if answer.status_code in (200, 201):
                        with self.lock:
                            self.ids[marker] = answer.json()["id"]
                            self.unanswered.discard(marker)
                        break
                    # An outage answers 503 with Retry-After: wait a little, ask again.
                    assert answer.status_code == 503, answer.text
                    assert answer.headers["content-type"].startswith("application/json")
                    self.retries["503"] += 1
                    time.sleep(min(float(answer.headers.get("Retry-After", 1)), 1.0))


def _operator_token() -> str:
    person = person_create(username=f"op-{uuid.uuid4().hex[:8]}", role="operator", password=None)
    return person_token_issue(person=person)


class Approvals:
    """A supervised agent's calls that wait for a person, decided during outages."""

    def __init__(self, cluster_: Cluster) -> None:
        created = agent_create(
            name=f"asks-{uuid.uuid4().hex[:8]}", access_level="elevated", autonomy="full"
        )
        self.workspace = Path(created.agent.workspace)
        self.agent_token = created.token
        self.operator = _operator_token()
        self.web = cluster_.web
        self.asked: dict[str, str] = {}  # marker -> invocation id
        self.decided: list[str] = []
        self.errors: list[str] = []

    def ask(self) -> None:
        """A call that waits for a person (made while everything runs)."""
        marker = f"a-{uuid.uuid4().hex[:12]}"
        with httpx.Client(headers={"Authorization": f"Bearer {self.agent_token}"}) as http:
            answer = http.post(
                f"{self.web[1]}/api/v1/invocations/",
                json={"tool": "test_counter_idempotent", "arguments": {"text": marker},
                      "idempotency_key": marker},
            )  # fmt: skip
        assert answer.status_code == 201, answer.text
        assert answer.json()["status"] == "pending_approval", answer.text
        self.asked[marker] = answer.json()["id"]

    def decide_all(self, node: str, *, patience: float = 60) -> None:
        """Approve every waiting request as a person would: asking again after a 503 or
        a lost answer until the console says it is decided."""
        try:
            self._decide_all(node, patience)
        except BaseException as exc:
            self.errors.append(repr(exc))  # read by the test: a thread's failure is not lost
            raise
        finally:
            connections.close_all()  # this thread's own

    def _decide_all(self, node: str, patience: float) -> None:
        # The test reads which requests wait from the database, which may be away too.
        deadline = time.monotonic() + patience
        while True:
            _database_back()
            try:
                pending = list(
                    ApprovalRequest.objects.filter(
                        invocation_id__in=self.asked.values(), status="pending"
                    ).values_list("id", flat=True)
                )
                break
            except (OperationalError, InterfaceError):
                assert time.monotonic() < deadline, "the database did not come back"
                time.sleep(0.5)
        with httpx.Client(headers={"Authorization": f"Bearer {self.operator}"}, timeout=10) as http:
            for request_id in list(pending):
                deadline = time.monotonic() + patience
                while True:
                    with contextlib.suppress(httpx.HTTPError):
                        answer = http.post(
                            f"{node}/api/v1/approvals/{request_id}/decide/",
                            json={"decision": "approve"},
                        )
                        # Decided now, or by the try whose answer was lost.
                        if answer.status_code in (200, 409):
                            self.decided.append(str(request_id))
                            break
                        assert answer.status_code == 503, answer.text
                    assert time.monotonic() < deadline, f"approval {request_id} not decided"
                    time.sleep(0.5)


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


def _runs(workspace: Path) -> collections.Counter[str]:
    counter = workspace / "counter.txt"
    if not counter.exists():
        return collections.Counter()
    return collections.Counter(
        line.split()[1] for line in counter.read_text().splitlines() if len(line.split()) > 1
    )


def _database_back() -> None:
    """The test's own connections after PostgreSQL restarted: dropped, taken anew."""
    for connection in connections.all(initialized_only=True):
        with contextlib.suppress(Exception):
            connection.close()
    close_old_connections()
    # Pooled connections from before the restart are dead: the pool drops them.
    pool = getattr(connections["default"], "pool", None)
    if pool is not None:
        pool.check()


@dataclasses.dataclass
class Fault:
    """One fault and what it did: calls in flight when it struck, seconds until every
    node was healthy again and a new call ran end to end."""

    name: str
    in_flight: int = 0
    to_healthy: float = 0.0


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
        # PostgreSQL's restart is not among them here: the suite's other long-lived web
        # node and worker share this PostgreSQL, and their pools answered 503 for a while
        # after it (tests/support/faults.restart_suite_postgres; a PostgreSQL of its own
        # for this test comes next).
        return self.done

    def outage(self, name: str, stop: Callable[[], None], start: Callable[[], None]) -> None:
        self.approvals.ask()
        time.sleep(BETWEEN)
        fault = Fault(name, in_flight=_in_flight())
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
        started = time.monotonic()
        self.wait_healthy()
        fault.to_healthy = time.monotonic() - started
        deciding.join(timeout=120)
        self.done.append(fault)

    def beat_away(self) -> None:
        """Beat killed: /healthz turns degraded (never 200 "ok") while it is away."""
        self.nodes.kill_beat()

        def degraded() -> bool:
            body = httpx.get(self.nodes.web[0] + "/healthz", timeout=5).json()
            return bool(body["status"] == "degraded" and "beat" in body["degraded"])

        wait_until(degraded, timeout=HEARTBEAT_MAX_AGE * 4, what="/healthz to say beat is away")

    def wait_healthy(self) -> None:
        """Every node says ok, and a new call runs end to end through node 0."""

        def healthy() -> bool:
            _database_back()
            for node in self.nodes.web:
                body = httpx.get(node + "/healthz", timeout=5).json()
                if body["status"] != "ok":
                    return False
            answer = httpx.post(
                self.nodes.web[0] + "/api/v1/invocations/",
                headers={"Authorization": f"Bearer {self.probe_token}"},
                json={"tool": "test_echo", "arguments": {"text": "healthy"}, "wait": 10},
                timeout=15,
            )
            return answer.status_code == 201 and answer.json()["status"] == "succeeded"

        wait_until(healthy, timeout=120, what="every part to be healthy", poll=0.2)


def _in_flight() -> int:
    _database_back()
    return Invocation.objects.filter(status__in=("queued", "running")).count()


def test_every_call_ends_once_while_each_part_is_killed_and_restarted(
    test_env: dict[str, str], tmp_path: Path
) -> None:
    agents = [
        agent_create(name=f"load-{uuid.uuid4().hex[:8]}", access_level="elevated", autonomy="full")
        for _ in range(CLIENTS)
    ]
    workspaces = [Path(a.agent.workspace) for a in agents]
    with _console(test_env, tmp_path) as (nodes, own):
        approvals = Approvals(nodes)
        with Load(nodes.web, [a.token for a in agents]) as load:
            time.sleep(BETWEEN)
            done = Faults(nodes, own, approvals).run()
        # Every call the agents made (and every approved one) reaches its end.
        ids = list(load.ids.values())
        asked = list(approvals.asked.values())
        rows = Invocation.objects.filter(id__in=[*ids, *asked])

        def all_final() -> bool:
            _database_back()
            return set(rows.values_list("status", flat=True)) <= FINAL and rows.count() == len(
                ids
            ) + len(asked)

        try:
            wait_until(all_final, timeout=SETTLE_SECONDS, what="every call to reach its end")
        except AssertionError as exc:
            open_rows = list(
                rows.exclude(status__in=FINAL).values_list(
                    "id", "status", "held", "worker", "dispatched_at", "started_at"
                )
            )
            missing = len(ids) + len(asked) - rows.count()
            raise AssertionError(f"{exc}: {missing} missing, open {open_rows[:10]}") from None
        output = nodes.outputs()
    endings = collections.Counter(rows.values_list("status", "error_code"))
    print(  # the figures of the run, for whoever reads the test's output
        "fault | calls in flight | seconds to healthy\n"
        + "\n".join(f"{f.name} | {f.in_flight} | {f.to_healthy:.1f}" for f in done)
        + f"\ncalls {len(ids)}, approvals {len(asked)}, client retries {dict(load.retries)}, "
        f"endings {dict(endings)}"
    )
    assert [f.name for f in done] == [
        "worker 0 killed", "web node 0 killed", "redis restarted", "beat killed",
    ]  # fmt: skip
    assert len(ids) > 50, f"too little load to judge: {len(ids)} calls ({dict(load.retries)})"
    # A call whose answer never came back was still recorded at most once, and ended.
    for marker in load.unanswered:
        found = Invocation.objects.filter(idempotency_key=marker)
        assert found.count() <= 1
        assert set(found.values_list("status", flat=True)) <= FINAL
    runs: collections.Counter[str] = collections.Counter()
    for workspace in [*workspaces, approvals.workspace]:
        runs.update(_runs(workspace))
    assert runs and max(runs.values()) == 1, "a call ran twice: " + str(runs.most_common(3))
    statuses = dict(rows.values_list("id", "status"))
    by_marker = {**load.ids, **approvals.asked}
    for marker, invocation_id in by_marker.items():
        status = statuses[uuid.UUID(invocation_id)]
        if status == "succeeded":
            assert runs[marker] == 1, f"{marker} succeeded but ran {runs[marker]} times"
        elif status in ("cancelled", "denied", "expired"):
            assert runs[marker] == 0, f"{marker} ended {status} but ran"
    assert approvals.errors == []
    # Every approval a person decided ran its call, once.
    approved = Invocation.objects.filter(id__in=asked)
    assert set(approved.values_list("status", flat=True)) == {"succeeded"}, output[-3000:]
    # Each call ended with exactly one invocation.finished row; the chain verifies.
    finished = collections.Counter(
        AuditEvent.objects.filter(invocation_id__in=[*ids, *asked], kind="invocation.finished")
        .values_list("invocation_id", flat=True)
    )  # fmt: skip
    assert max(finished.values()) == 1
    ran = rows.exclude(status__in=("cancelled", "denied", "expired"))
    assert {i for i in ran.values_list("id", flat=True)} == set(finished)
    report = audit_chain_verify()
    assert report.ok, report.summary()
