"""Faults under a running console, and the load that counts what they cost.

Parts a fault test stops and starts: a Redis of its own on loopback TCP (append-only, as
the production section runs it) and a PostgreSQL cluster of its own (the suite's
PostgreSQL is never restarted: other tests use it at the same time).

The load: agents calling ``test_counter`` in a closed loop through REST, each call
recording its run by a marker line in its workspace; approvals decided during the
outages; and the check that compares the record with what ran.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import glob
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psycopg
from django.db import close_old_connections, connections

from common.testing import BASE_DIR, free_port, require, wait_until

FINAL = {"succeeded", "failed", "timed_out", "cancelled", "denied", "expired"}


# The approval rule every fault module's console runs with: one tool asks a person, so
# approvals can be decided during each outage.
ASKS_A_PERSON_RULE: dict[str, object] = {
    "name": "asks-a-person",
    "match": {"tool": "test_counter_idempotent"},
    "disposition": "require_approval",
    "risk_tier": "medium",
}


class OwnRedis:
    """A redis-server of the test's own, on a loopback TCP port, append-only."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--appendonly", "yes", "--save", "", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_until(self._answers, timeout=30, what="redis-server")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)

    def _answers(self) -> bool:
        import redis

        return bool(redis.Redis.from_url(self.url, socket_timeout=1).ping())


def _pg_tool(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    path = found[-1] if found else shutil.which(name)
    require(path is not None, f"PostgreSQL's {name}")
    assert path is not None
    return path


class OwnPostgres:
    """A PostgreSQL cluster of the test's own on a loopback TCP port (no Unix socket,
    ``fsync=off``), with one database ``synthorg``: it stops (``fast`` ends every
    session at once, ``immediate`` as a crash) and starts again on the same port.

    Its directory is made under the run directory of ``scripts/test.sh``, which the
    ``postgres`` user can reach (initdb refuses root; pytest's own temporary
    directories are private to root)."""

    def __init__(self) -> None:
        parent = os.environ.get("SYNTHORG_TEST_RUN_DIR") or tempfile.gettempdir()
        self.directory = Path(tempfile.mkdtemp(prefix="own-postgres-", dir=parent))
        self.directory.chmod(0o755)
        self.data = self.directory / "data"
        self.log = self.directory / "postgres.log"
        self.port = free_port()

    @property
    def url(self) -> str:
        return f"postgres://synthorg@127.0.0.1:{self.port}/synthorg"

    def create(self) -> None:
        """initdb, start, and create the console's database."""
        self.data.mkdir(mode=0o700)
        self.log.touch()
        if os.geteuid() == 0:
            shutil.chown(self.data, "postgres")
            shutil.chown(self.log, "postgres")
        self._as_postgres(_pg_tool("initdb"), "-D", str(self.data), "-U", "synthorg",
                          "--auth=trust", "-E", "UTF8")  # fmt: skip
        self.start()
        admin = f"postgresql://synthorg@127.0.0.1:{self.port}/postgres"
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute("CREATE DATABASE synthorg")

    def start(self) -> None:
        """Start on the same port; returns once it accepts sessions.

        ``synchronous_commit`` stays on, as in production: with it off, an immediate
        stop loses commits the console was told were made (a claimed call is found
        queued again and runs twice), which no console could survive. ``fsync=off``
        loses nothing here: an immediate stop ends processes, not the machine."""
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories='' "
            "-c fsync=off -c full_page_writes=off "
            "-c max_connections=300"
        )
        self._as_postgres(_pg_tool("pg_ctl"), "-D", str(self.data), "-l", str(self.log),
                          "-w", "-t", "60", "-o", options, "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """``fast``: sessions are ended and it shuts down cleanly; ``immediate``: it
        stops at once, recovering from its WAL on the next start, as after a crash."""
        self._as_postgres(_pg_tool("pg_ctl"), "-D", str(self.data), "-m", mode, "-w",
                          "-t", "60", "stop")  # fmt: skip

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(AssertionError):
                self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def _as_postgres(self, *argv: str) -> None:
        command = list(argv)
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{argv[0]}: {done.stderr}\n{self.log_tail()}"


def connections_to(pid: int, port: int) -> int:
    """How many established TCP connections process ``pid`` holds to ``port``."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    count = 0
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote, state, inode = fields[2], fields[3], fields[9]
        established = state == "01"
        if established and inode in inodes and int(remote.rsplit(":", 1)[1], 16) == port:
            count += 1
    return count


def migrate(env: dict[str, str]) -> None:
    """The console's migrations, as an operator runs them, on ``env``'s database."""
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"], env=env, cwd=BASE_DIR,
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


@contextlib.contextmanager
def database_of(url: str) -> Iterator[None]:
    """This test process's ORM on the database at ``url`` for the block (every thread's
    connections, and the pool Django keeps per alias, are made anew from it); the test
    database is back after."""
    import environ

    target = environ.Env.db_url_config(url)
    settings_dict = connections.settings["default"]
    keys = ("NAME", "USER", "PASSWORD", "HOST", "PORT")
    saved = {key: settings_dict.get(key) for key in keys}
    _forget_default_connection()
    settings_dict.update({key: target.get(key, "") for key in keys})
    try:
        yield
    finally:
        _forget_default_connection()
        settings_dict.update(saved)


def _forget_default_connection() -> None:
    connection = connections["default"]
    with contextlib.suppress(Exception):
        connection.close()
    close_pool = getattr(connection, "close_pool", None)
    if close_pool is not None:
        with contextlib.suppress(Exception):
            close_pool()
    del connections["default"]


def database_back() -> None:
    """The test's own connections after PostgreSQL restarted: dropped, taken anew."""
    for connection in connections.all(initialized_only=True):
        with contextlib.suppress(Exception):
            connection.close()
    close_old_connections()
    # Pooled connections from before the restart are dead: the pool drops them.
    pool = getattr(connections["default"], "pool", None)
    if pool is not None:
        pool.check()


class Load:
    """Agents calling test_counter in a closed loop across the web nodes.

    Each call carries a marker (its idempotency key too): a client that loses its
    answer (a node killed, an outage) asks again with the same key, on the next node,
    until it gets one, as a careful client does. An outage may answer 503 with
    Retry-After in the JSON envelope; any other answer is kept in ``errors``.
    """

    def __init__(self, web: list[str], tokens: list[str], *, pause: float = 0.0) -> None:
        self.web = web
        self.pause = pause  # between one call's answer and the next call
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.ids: dict[str, str] = {}  # marker -> invocation id
        self.unanswered: set[str] = set()  # markers never answered with an id
        self.retries: collections.Counter[str] = collections.Counter()
        self.errors: list[str] = []  # answers that were neither a call nor a JSON 503
        self.last_503 = 0.0  # time.monotonic() of the latest 503
        self.threads = [threading.Thread(target=self._client, args=(t,)) for t in tokens]

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=120)

    def add(self, marker: str, invocation_id: str) -> None:
        """A call made beside the loop, counted with the others."""
        with self.lock:
            self.ids[marker] = invocation_id

    def _client(self, token: str) -> None:
        try:
            self._calls(token)
        except BaseException as exc:
            self.errors.append(f"client stopped: {exc!r}")
            raise

    def _calls(self, token: str) -> None:
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
                    try:
                        answer = http.post(f"{next(nodes)}/api/v1/invocations/", json=body)
                    except httpx.HTTPError as exc:
                        self.retries[type(exc).__name__] += 1
                        time.sleep(0.3)
                        continue
                    if answer.status_code in (200, 201):
                        with self.lock:
                            self.ids[marker] = answer.json()["id"]
                            self.unanswered.discard(marker)
                        self.stop.wait(self.pause)
                        break
                    if not _is_outage_answer(answer):
                        self.errors.append(f"{answer.status_code} {answer.text[:300]}")
                    self.retries[str(answer.status_code)] += 1
                    self.last_503 = time.monotonic()
                    time.sleep(min(float(answer.headers.get("Retry-After", 1)), 1.0))


def _is_outage_answer(answer: httpx.Response) -> bool:
    """503 unavailable with Retry-After, in the JSON envelope."""
    if answer.status_code != 503 or "Retry-After" not in answer.headers:
        return False
    if not answer.headers.get("content-type", "").startswith("application/json"):
        return False
    return bool(answer.json().get("error", {}).get("code") == "unavailable")


def operator_token() -> str:
    from trust_app.services.agents import person_create, person_token_issue

    person = person_create(username=f"op-{uuid.uuid4().hex[:8]}", role="operator", password=None)
    return person_token_issue(person=person)


class Approvals:
    """A supervised agent's calls that wait for a person, decided during outages."""

    def __init__(self, web: list[str]) -> None:
        from trust_app.services.agents import agent_create

        created = agent_create(
            name=f"asks-{uuid.uuid4().hex[:8]}", access_level="elevated", autonomy="full"
        )
        self.workspace = Path(created.agent.workspace)
        self.agent_token = created.token
        self.operator = operator_token()
        self.web = web
        self.asked: dict[str, str] = {}  # marker -> invocation id
        self.undecided: list[str] = []  # approval request ids
        self.decided: list[str] = []
        self.errors: list[str] = []

    def ask(self) -> None:
        """A call that waits for a person (made while everything runs)."""
        marker = f"a-{uuid.uuid4().hex[:12]}"
        with httpx.Client(headers={"Authorization": f"Bearer {self.agent_token}"}) as http:
            answer = http.post(
                f"{self.web[-1]}/api/v1/invocations/",
                json={"tool": "test_counter_idempotent", "arguments": {"text": marker},
                      "idempotency_key": marker},
            )  # fmt: skip
        assert answer.status_code == 201, answer.text
        assert answer.json()["status"] == "pending_approval", answer.text
        self.asked[marker] = answer.json()["id"]
        self.undecided.append(answer.json()["approval"]["id"])

    def decide_all(self, node: str, *, patience: float = 60) -> None:
        """Approve every request asked so far as a person would: asking again after a
        503 or a lost answer until the console says it is decided."""
        try:
            self._decide_all(node, patience)
        except BaseException as exc:
            self.errors.append(repr(exc))  # read by the test: a thread's failure is not lost
            raise

    def _decide_all(self, node: str, patience: float) -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {self.operator}"}, timeout=10) as http:
            while self.undecided:
                request_id = self.undecided[0]
                deadline = time.monotonic() + patience
                while True:
                    with contextlib.suppress(httpx.HTTPError):
                        answer = http.post(
                            f"{node}/api/v1/approvals/{request_id}/decide/",
                            json={"decision": "approve"},
                        )
                        # Decided now, or by the try whose answer was lost.
                        if answer.status_code in (200, 409):
                            self.decided.append(request_id)
                            break
                        assert _is_outage_answer(answer), f"{answer.status_code} {answer.text}"
                    assert time.monotonic() < deadline, f"approval {request_id} not decided"
                    time.sleep(0.5)
                self.undecided.pop(0)


def marker_runs(workspace: Path) -> collections.Counter[str]:
    """How many times each marker ran in ``workspace`` (one line per run)."""
    counter = workspace / "counter.txt"
    if not counter.exists():
        return collections.Counter()
    return collections.Counter(
        line.split()[1] for line in counter.read_text().splitlines() if len(line.split()) > 1
    )


def calls_in_flight() -> int:
    from tools_app.models import Invocation

    database_back()
    return Invocation.objects.filter(status__in=("queued", "running")).count()


def wait_healthy(web: list[str], probe_token: str, *, timeout: float = 120) -> float:
    """Seconds until every node's /healthz says ok and a new call runs end to end
    through the first node."""
    started = time.monotonic()

    def healthy() -> bool:
        database_back()
        for node in web:
            body = httpx.get(node + "/healthz", timeout=5).json()
            if body["status"] != "ok":
                return False
        answer = httpx.post(
            web[0] + "/api/v1/invocations/",
            headers={"Authorization": f"Bearer {probe_token}"},
            json={"tool": "test_echo", "arguments": {"text": "healthy"}, "wait": 10},
            timeout=15,
        )
        return answer.status_code == 201 and answer.json()["status"] == "succeeded"

    wait_until(healthy, timeout=timeout, what="every part to be healthy", poll=0.2)
    return time.monotonic() - started


@dataclasses.dataclass
class Fault:
    """One fault and what it did: calls in flight when it struck, seconds until every
    node was healthy again and a new call ran end to end."""

    name: str
    in_flight: int = 0
    to_healthy: float = 0.0


def record_check(
    load: Load,
    approvals: Approvals,
    workspaces: list[Path],
    done: list[Fault],
    *,
    settle_seconds: float,
    logs: Callable[[], str],
) -> collections.Counter[tuple[str, str]]:
    """Every call the agents made (and every approved one) reaches its end, ran once,
    and the record says so; prints the figures first. Returns the endings (status,
    error code) of the calls."""
    from audit_app.models import AuditEvent
    from audit_app.verify import audit_chain_verify
    from tools_app.models import Invocation

    ids = list(load.ids.values())
    asked = list(approvals.asked.values())
    rows = Invocation.objects.filter(id__in=[*ids, *asked])

    def all_final() -> bool:
        database_back()
        statuses = set(rows.values_list("status", flat=True))
        return statuses <= FINAL and rows.count() == len(ids) + len(asked)

    unsettled = ""
    try:
        wait_until(all_final, timeout=settle_seconds, what="every call to reach its end")
    except AssertionError as exc:
        unsettled = str(exc)
    open_rows = list(
        rows.exclude(status__in=FINAL).values_list(
            "id", "status", "held", "worker", "dispatched_at", "started_at"
        )
    )
    lost = len(open_rows) + len(ids) + len(asked) - rows.count()
    runs: collections.Counter[str] = collections.Counter()
    for workspace in [*workspaces, approvals.workspace]:
        runs.update(marker_runs(workspace))
    duplicated = sum(1 for count in runs.values() if count > 1)
    endings = collections.Counter(rows.values_list("status", "error_code"))
    print(  # the figures of the run, for whoever reads the test's output
        "fault | calls in flight | seconds to healthy\n"
        + "\n".join(f"{f.name} | {f.in_flight} | {f.to_healthy:.1f}" for f in done)
        + f"\ncalls {len(ids)}, approvals {len(asked)}, lost {lost}, duplicated {duplicated}, "
        f"client retries {dict(load.retries)}, endings {dict(endings)}"
    )
    assert not unsettled, f"{unsettled}: {lost} lost, open {open_rows[:10]}\n{logs()}"
    assert load.errors == [], load.errors[:5]
    assert approvals.errors == []
    # A call whose answer never came back was still recorded at most once, and ended.
    for marker in load.unanswered:
        found = Invocation.objects.filter(idempotency_key=marker)
        assert found.count() <= 1
        assert set(found.values_list("status", flat=True)) <= FINAL
    assert runs and duplicated == 0, "a call ran twice: " + str(runs.most_common(3))
    statuses = dict(rows.values_list("id", "status"))
    for marker, invocation_id in {**load.ids, **approvals.asked}.items():
        status = statuses[uuid.UUID(invocation_id)]
        if status == "succeeded":
            assert runs[marker] == 1, f"{marker} succeeded but ran {runs[marker]} times"
        elif status in ("cancelled", "denied", "expired"):
            assert runs[marker] == 0, f"{marker} ended {status} but ran"
    # Every approval a person decided ran its call, once.
    approved = Invocation.objects.filter(id__in=asked)
    assert set(approved.values_list("status", flat=True)) == {"succeeded"}, logs()[-3000:]
    # Each call ended with exactly one invocation.finished row; the chain verifies.
    finished = collections.Counter(
        AuditEvent.objects.filter(invocation_id__in=[*ids, *asked], kind="invocation.finished")
        .values_list("invocation_id", flat=True)
    )  # fmt: skip
    assert max(finished.values()) == 1
    ran = rows.exclude(status__in=("cancelled", "denied", "expired"))
    assert set(ran.values_list("id", flat=True)) == set(finished)
    report = audit_chain_verify()
    assert report.ok, report.summary()
    return endings
