"""An upgrade from the previous release with its data, done in the order the README's
"Upgrades" gives, while an agent keeps calling.

The previous release (``PREVIOUS_RELEASE``, its own code unpacked beside this checkout)
runs on a fresh database and a fresh var/: two agents and an operator made with its own
commands, calls that succeed, one call waiting for a person, audit events and a
checkpoint. Then, its web node and worker serving the load all along: beat stops, this
release migrates the database and collects its static files, a worker and a web node of
this release start, and the two releases serve side by side (calls through either node,
run by either worker; the old tokens work on the new node; the waiting approval is
still there and, approved on the new node, runs once). The old nodes are stopped with
SIGTERM, beat starts from this release, and it serves alone.

Nothing is lost or run twice: every call the agent made ended ``succeeded`` with exactly
one ``invocation.finished`` row and exactly one line in its workspace (a worker of this
release writes the call's marker on it, one of the previous release a bare ``run``), the
clients saw only JSON, and this release's ``synthorg_audit verify`` finds the chain, the
previous release's checkpoint included, intact.
"""

from __future__ import annotations

import collections
import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
import redis

from common.testing import free_port, http_status, require, wait_until
from tests.support.pipeline import own_redis
from tests.support.release import (
    CURRENT,
    PREVIOUS_RELEASE,
    Load,
    Release,
    fresh_database,
    fresh_var,
    release_checkout,
    stop,
)

pytestmark = [pytest.mark.integration]

REDIS_DB = 8
# Concurrent clients of the load agent: more calls at once than the previous release's
# worker runs (two processes), so that the workers of both releases take calls.
CLIENTS = 4
TOOL_SECONDS = 0.5
SETTLE_SECONDS = 120
# Beat has the chain checkpointed this often (seconds), by either release's worker.
CHECKPOINT_SECONDS = 3
FINAL = {"succeeded", "failed", "timed_out", "cancelled", "denied", "expired"}
PHASES = ("previous alone", "side by side", "current alone")


@pytest.fixture(scope="module")
def previous(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Release]:
    """The previous release's code and interpreter, unpacked once for the module."""
    into = tmp_path_factory.mktemp("previous") / PREVIOUS_RELEASE
    with release_checkout(PREVIOUS_RELEASE, into) as release:
        yield release


class Record:
    """The upgraded database, read as the test goes (each query sees the latest commit)."""

    def __init__(self, url: str) -> None:
        self.connection = psycopg.connect(url, autocommit=True)

    def calls(self, ids: list[str]) -> dict[str, tuple[str, str]]:
        """id -> (status, worker)."""
        rows = self.connection.execute(
            "SELECT id::text, status, worker FROM tools_app_invocation WHERE id = ANY(%s::uuid[])",
            (ids,),
        ).fetchall()
        return {row[0]: (row[1], row[2]) for row in rows}

    def finished_rows(self, ids: list[str]) -> collections.Counter[str]:
        rows = self.connection.execute(
            "SELECT invocation_id::text FROM tools_app_auditevent "
            "WHERE kind = 'invocation.finished' AND invocation_id = ANY(%s::uuid[])",
            (ids,),
        ).fetchall()
        return collections.Counter(row[0] for row in rows)


@dataclass
class Installed:
    """The previous release's agents and operator: the load agent's token, the others'
    Authorization headers, and the agents' workspaces."""

    agent_token: str  # the load agent's, full autonomy
    careful: dict[str, str]  # the locked agent's: every change waits for a person
    operator: dict[str, str]
    workspace: Path
    careful_workspace: Path

    @property
    def agent(self) -> dict[str, str]:
        return _bearer(self.agent_token)


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _install(previous: Release, env: dict[str, str], var: Path) -> Installed:
    """The previous release migrates, and makes two agents and an operator with its own
    commands (agents as code; a person with a token); its tokens are shown once."""
    _ok(previous.manage(env, "migrate", "--noinput"))
    workspaces = {name: var / "workspaces" / name for name in ("steady", "careful")}
    agents = {"version": 1, "agents": [
        {"name": "steady", "access_level": "standard", "autonomy": "full",
         "workspace": str(workspaces["steady"])},
        {"name": "careful", "access_level": "standard", "autonomy": "locked",
         "workspace": str(workspaces["careful"])},
    ]}  # fmt: skip
    (var.parent / "agents.yaml").write_text(json.dumps(agents))  # JSON is YAML
    with ThreadPoolExecutor(2) as pool:
        applied, person = pool.map(lambda args: _ok(previous.manage(env, *args)), [
            ("synthorg_agents", "apply", str(var.parent / "agents.yaml")),
            ("synthorg_user", "create", "operator", "--role", "operator", "--token"),
        ])  # fmt: skip
    tokens = dict(re.findall(r"token of new agent (\S+) \(shown once\):\n(\S+)", applied))
    assert set(tokens) == {"steady", "careful"}, applied
    return Installed(
        agent_token=tokens["steady"], careful=_bearer(tokens["careful"]),
        operator=_bearer(person.strip().splitlines()[-1]),
        workspace=workspaces["steady"], careful_workspace=workspaces["careful"],
    )  # fmt: skip


def _use(node: str, installed: Installed) -> str:
    """Calls that succeed on the previous release, and one that waits for a person (its id)."""
    with httpx.Client(base_url=node, timeout=60) as http:
        for tool, arguments in [
            ("write_file", {"path": "kept.txt", "content": "written before the upgrade\n"}),
            ("read_file", {"path": "kept.txt"}),
        ]:
            done = http.post("/api/v1/invocations/", headers=installed.agent,
                             json={"tool": tool, "arguments": arguments, "wait": 30})  # fmt: skip
            assert done.status_code == 201 and done.json()["status"] == "succeeded", done.text
        waiting = http.post(
            "/api/v1/invocations/", headers=installed.careful,
            json={"tool": "test_counter", "arguments": {"text": "approved-after-upgrade"}},
        ).json()  # fmt: skip
    assert waiting["status"] == "pending_approval", waiting
    return str(waiting["id"])


def _side_by_side(node: str, installed: Installed, waiting: str) -> None:
    """On the new node: the previous release's tokens work, its file is there, and the
    call that waited for a person is still waiting and runs once approved."""
    with httpx.Client(base_url=node, timeout=60) as http:
        assert http.get("/api/v1/me/", headers=installed.agent).status_code == 200
        kept = http.post("/api/v1/invocations/", headers=installed.agent, json={
            "tool": "read_file", "arguments": {"path": "kept.txt"}, "wait": 30,
        }).json()  # fmt: skip
        assert "written before the upgrade" in str(kept["result"]), kept
        pending = http.get("/api/v1/approvals/", params={"status": "pending"},
                           headers=installed.operator).json()["results"]  # fmt: skip
        request = [r["id"] for r in pending if r["invocation"]["id"] == waiting]
        assert len(request) == 1, pending
        decided = http.post(f"/api/v1/approvals/{request[0]}/decide/",
                            headers=installed.operator, json={"decision": "approve"})  # fmt: skip
        assert decided.status_code == 200, decided.text
        ran = http.get(f"/api/v1/invocations/{waiting}/", params={"wait": 30},
                       headers=installed.careful).json()  # fmt: skip
    assert ran["status"] == "succeeded", ran


def _wait_for_web(url: str) -> None:
    wait_until(lambda: http_status(url + "/healthz") in (200, 503), timeout=90, what=url)


def _runs(workspace: Path) -> list[str]:
    """What each run wrote on its line of counter.txt (its marker, or "" if none)."""
    counter = workspace / "counter.txt"
    lines = counter.read_text().splitlines() if counter.exists() else []
    return [line.removeprefix("run").strip() for line in lines]


def test_an_upgrade_from_the_previous_release_serves_every_call_while_both_run(
    previous: Release, test_env: dict[str, str], tmp_path: Path
) -> None:
    require(test_env["DATABASE_URL"].startswith("postgres"), "PostgreSQL for the suite")
    old_worker = f"previous-worker-{uuid.uuid4().hex[:6]}@localhost"
    new_worker = f"current-worker-{uuid.uuid4().hex[:6]}@localhost"
    old_url, new_url = (f"http://127.0.0.1:{free_port()}" for _ in range(2))
    with (
        fresh_database(test_env["DATABASE_URL"]) as database,
        fresh_var() as var,
        ExitStack() as stack,
    ):
        env = dict(
            test_env, DATABASE_URL=database, SYNTHORG_VAR_DIR=str(var),
            REDIS_URL=own_redis(test_env["REDIS_URL"], REDIS_DB),
            SYNTHORG_EXTRA_TOOL_MODULES="tests.support.tools",
            SYNTHORG_AUDIT_CHECKPOINT_SECONDS=str(CHECKPOINT_SECONDS),
        )  # fmt: skip
        # Each release imports its own code: nothing inherited may point at this checkout.
        for name in ("PYTHONPATH", "SYNTHORG_CONFIG", "SYNTHORG_AUDIT_CHECKPOINT_DIR"):
            env.pop(name, None)
        broker = redis.Redis.from_url(env["REDIS_URL"])
        broker.flushdb()

        def heartbeat(name: str) -> None:
            key = f"synthorg:heartbeat:worker:{name}"
            wait_until(lambda: bool(broker.exists(key)), timeout=90, what=f"{name}'s heartbeat")

        # --- The previous release, installed and running, with its data.
        installed = _install(previous, env, var)
        old_web = stack.enter_context(
            previous.web(env, int(old_url.rsplit(":", 1)[1]), tmp_path / "web-previous.log")
        )
        old = stack.enter_context(
            previous.worker(env, old_worker, tmp_path / "worker-previous.log")
        )
        beat = stack.enter_context(
            previous.beat(env, tmp_path / "beat-previous", tmp_path / "beat-previous.log")
        )
        heartbeat(old_worker)
        _wait_for_web(old_url)
        waiting = _use(old_url, installed)
        record = Record(database)
        stack.callback(record.connection.close)

        with Load(installed.agent_token, [old_url], PHASES[0], clients=CLIENTS,
                  seconds=TOOL_SECONDS) as load:  # fmt: skip
            wait_until(lambda: len(load.calls) >= 3, timeout=60, what="the load to run")
            # The previous release's beat and worker checkpoint the chain, as in production.
            store = var / "audit-checkpoints"
            wait_until(lambda: any(store.glob("*.json")), timeout=60, what="a checkpoint")
            checkpointed_before = sorted(path.name for path in store.glob("*.json"))
            # --- The README's "Upgrades", step by step, while the old nodes serve.
            stop(beat)
            migrated = _ok(CURRENT.manage(env, "migrate", "--noinput"))
            assert "Applying audit_app.0001_initial... OK" in migrated, migrated
            _ok(CURRENT.manage(env, "collectstatic", "--noinput"))
            stack.enter_context(CURRENT.worker(env, new_worker, tmp_path / "worker-current.log"))
            stack.enter_context(
                CURRENT.web(env, int(new_url.rsplit(":", 1)[1]), tmp_path / "web-current.log")
            )
            heartbeat(new_worker)
            _wait_for_web(new_url)
            load.serve([old_url, new_url], PHASES[1])

            def both_serve() -> bool:
                """Calls through each node succeeded, and each release's worker ran some."""
                calls = load.answered(PHASES[1])
                found = record.calls([c.id for c in calls])
                done = [(c.node, found[c.id][1]) for c in calls
                        if found.get(c.id, ("", ""))[0] == "succeeded"]  # fmt: skip
                nodes, workers = {n for n, _ in done}, {w for _, w in done}
                return nodes == {old_url, new_url} and workers == {old_worker, new_worker}

            wait_until(both_serve, timeout=120, what="calls through both nodes and both workers")
            _side_by_side(new_url, installed, waiting)
            # The old nodes stop while the load goes on; then beat starts from this release.
            assert stop(old) == 0, old.output()[-3000:]
            stop(old_web)
            load.serve([new_url], PHASES[2])
            stack.enter_context(
                CURRENT.beat(env, tmp_path / "beat-current", tmp_path / "beat-current.log")
            )
            wait_until(
                lambda: httpx.get(new_url + "/healthz", timeout=5).json()["status"] == "ok",
                timeout=90, what="this release alone to be healthy, beat included",
            )  # fmt: skip
            wait_until(lambda: len(load.answered(PHASES[2])) >= 5, timeout=60,
                       what="calls served by this release alone")  # fmt: skip

        # --- Every call ended once, and the record says what ran.
        calls = list(load.calls.values())
        ids = [call.id for call in calls]

        def all_ended() -> bool:
            found = record.calls(ids)
            return len(found) == len(ids) and {s for s, _ in found.values()} <= FINAL

        wait_until(all_ended, timeout=SETTLE_SECONDS, what="every call to end")
        ended = record.calls(ids)
        summary = (
            f"calls {len(calls)} by phase {collections.Counter(c.phase for c in calls)}, "
            f"by worker {collections.Counter(w for _, w in ended.values())}, "
            f"client retries {dict(load.retries)}"
        )
        print(summary)  # the run's figures, for whoever reads the test's output
        assert load.unanswered == set() and load.refused == [], (load.unanswered, load.refused)
        assert load.not_json == [], load.not_json
        assert len(set(ids)) == len(calls), "two markers answered with one call"
        assert {s for s, _ in ended.values()} == {"succeeded"}, summary
        assert {c.phase for c in calls} == set(PHASES), summary
        # One line per run: this release's worker writes the call's marker, the previous
        # release's a bare "run"; so each call ran once, by the worker the record names.
        runs = collections.Counter(_runs(installed.workspace))
        by_marker = {marker: ended[call.id][1] for marker, call in load.calls.items()}
        marked = {marker: count for marker, count in runs.items() if marker}
        ran_here = {marker: 1 for marker, worker in by_marker.items() if worker == new_worker}
        assert marked == ran_here, runs.most_common(3)
        assert runs[""] == sum(w == old_worker for w in by_marker.values()), summary
        assert len(_runs(installed.careful_workspace)) == 1, "the approved call ran once"
        finished = record.finished_rows([*ids, waiting])
        assert set(finished) == {*ids, waiting} and max(finished.values()) == 1
        verified = _ok(CURRENT.manage(env, "synthorg_audit", "verify"))
        assert "audit chain intact" in verified, verified
        # Every checkpoint in the store must match (any that does not fails verify): the
        # previous release's are still there and count among them.
        matched = re.search(r"(\d+) checkpoint\(s\) matched", verified)
        assert matched and int(matched.group(1)) >= len(checkpointed_before), verified
        assert set(checkpointed_before) <= {path.name for path in store.glob("*.json")}
