"""What a governed call costs against the parts it is made of, in the same run.

Starts the console as `make run` does (``python -m synthorg_site.launcher``: web, two
worker processes, beat) and measures the CPU per operation of each process under a
closed loop of CLIENTS clients for PHASE_SECONDS each:
- an agent reading one invocation (``GET /api/v1/invocations/{id}/``): the web node's
  cost of an authenticated request through Django, DRF and daphne, with one row read;
- a call the policy denies: the door, the validation, the decision, the recorded call
  and its audit event, and no worker;
- a governed read_file: all of the above, the queue, the worker, the sandbox, the
  finish and the answer;
- a Celery task that does nothing (``celery.accumulate``) sent to the workers'
  queue: the transport's and Celery's own cost per task in a worker;
- before the console starts, daphne serving the smallest Django application
  (``bench/floors_app.py``): a plain async view, and a DRF view, each answering a
  small JSON body with no middleware, no authentication and no database.

The difference between the rows is what the product adds to its frameworks; the
framework rows are the floor the engine's figures stand on.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

import httpx  # noqa: E402

from bench.bench_engine import (  # noqa: E402
    _agent,
    _call,
    _children,
    _client,
    _cpu_by_role,
    _postgresql_root,
    console_env,
)
from bench.measure import tree_cpu_seconds  # noqa: E402
from common.testing import free_port, http_status, python_argv, running, wait_until  # noqa: E402
from trust_app.services.agents import agent_create  # noqa: E402

CLIENTS = 8
PHASE_SECONDS = 10
NOOP_TASKS = 2000
NOOP_BUDGET_SECONDS = 120
DENIED = {"url": "http://127.0.0.1:9/"}


def _loop(base: str, tokens: list[str], request: Callable[[httpx.Client], str | None]) -> int:
    """Closed loop: each client repeats ``request`` for PHASE_SECONDS; the count of
    requests. ``request`` returns None, or what was unexpected (which stops the bench)."""
    done = [0] * len(tokens)
    wrong: list[str] = []
    deadline = time.monotonic() + PHASE_SECONDS

    def client(index: int) -> None:
        token = tokens[index]
        with _client(base, token) if token else httpx.Client(base_url=base, timeout=90) as http:
            while time.monotonic() < deadline and not wrong:
                try:
                    unexpected = request(http)
                except httpx.HTTPError as exc:
                    unexpected = repr(exc)
                if unexpected is None:
                    done[index] += 1
                else:
                    wrong.append(unexpected[:500])

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(tokens))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if wrong:
        raise SystemExit(f"a request of the loop was answered: {wrong[0]}")
    return sum(done)


def _unless(answer: dict[str, object], status: str) -> str | None:
    return None if answer.get("status") == status else str(answer)


class Meter:
    """CPU seconds of each role of the console, of PostgreSQL and of this process."""

    def __init__(self, roles: dict[str, list[int]], database: int | None) -> None:
        self.roles, self.database = roles, database

    def read(self) -> dict[str, float]:
        now = _cpu_by_role(self.roles)
        now["postgresql"] = tree_cpu_seconds(self.database) if self.database else 0.0
        now["client"] = time.process_time()
        return now

    def per_op(self, before: dict[str, float], count: int) -> dict[str, float]:
        after = self.read()
        return {k: (after[k] - before.get(k, 0.0)) * 1000 / max(count, 1) for k in after}


def _row(figure: str, per: dict[str, float], count: int, rate: float) -> dict[str, object]:
    console = {k: v for k, v in per.items() if k not in ("postgresql", "client")}
    return {
        "figure": f"floors: {figure}",
        "unit": "ms",
        "p50": sum(console.values()),
        "rate": rate,
        "note": (
            f"CPU per operation, console processes summed; {count} in {PHASE_SECONDS}s; "
            + ", ".join(f"{k} {v:.2f}" for k, v in sorted(per.items()))
        ),
    }


def _noop_tasks(meter: Meter) -> dict[str, object]:
    """NOOP_TASKS no-op tasks on the workers' default queue, until every one is taken
    and acknowledged."""
    from synthorg_site.celery import app

    with app.connection_for_write() as connection:
        redis = connection.default_channel.client
        before, started = meter.read(), time.monotonic()
        for _ in range(NOOP_TASKS):
            app.send_task("celery.accumulate", args=(1,), queue="default", ignore_result=True)
        deadline = started + NOOP_BUDGET_SECONDS
        while time.monotonic() < deadline:
            if redis.llen("default") == 0 and redis.hlen("unacked") == 0:
                break
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        per = meter.per_op(before, NOOP_TASKS)
    per.pop("web", None)
    return {
        "figure": "floors: a Celery task that does nothing, per task",
        "unit": "ms",
        "p50": sum(v for k, v in per.items() if k not in ("postgresql", "client")),
        "rate": NOOP_TASKS / elapsed,
        "note": "celery.accumulate sent to the default queue and taken by the two worker "
        "processes; CPU per task: " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(per.items())),
    }


def _bare(tmp: Path) -> None:
    """daphne and Django alone, on the same machine and load (bench/floors_app.py)."""
    port = free_port()
    argv = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "bench.floors_app:application"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    base = f"http://127.0.0.1:{port}"
    with running(argv, env=env, log_path=tmp / "bare.log") as bare:
        wait_until(lambda: http_status(base + "/plain") == 200, timeout=60, what="daphne")
        meter = Meter({"web": [bare.process.pid]}, None)
        for url, figure in (
            ("/plain", "daphne and a Django async view, no middleware (the framework floor)"),
            ("/drf", "daphne and a DRF view, no middleware, no authentication"),
        ):
            for _ in range(50):
                httpx.get(base + url)
            before, started = meter.read(), time.monotonic()
            count = _loop(base, [""] * CLIENTS, functools.partial(_get_ok, url=url))
            rate = count / (time.monotonic() - started)
            per = meter.per_op(before, count)
            per.pop("postgresql", None)
            print(json.dumps(_row(figure, per, count, rate)), flush=True)


def _get_ok(http: httpx.Client, url: str) -> str | None:
    answer = http.get(url)
    return None if answer.status_code == 200 else f"{answer.status_code} {answer.text[:200]}"


def main() -> None:
    env = console_env()
    tmp = Path(tempfile.mkdtemp(prefix="bench-floors-"))
    base = f"http://127.0.0.1:{env['PORT']}"
    emit: Callable[[dict[str, object]], None] = lambda r: print(json.dumps(r), flush=True)  # noqa: E731
    _bare(tmp)
    with running(
        python_argv("-m", "synthorg_site.launcher"), env=env, log_path=tmp / "console.log"
    ) as console:
        wait_until(lambda: http_status(base + "/healthz") == 200, timeout=240, what="the console")
        tokens = [_agent("bench-floors")[0] for _ in range(CLIENTS)]
        # A sandboxed agent (no network): its http_request is denied by the policy, and
        # recorded. The address is never reached.
        readers = [
            agent_create(
                name=f"bench-floors-ro-{uuid.uuid4().hex[:8]}",
                access_level="sandboxed",
                autonomy="full",
            ).token
            for _ in range(CLIENTS)
        ]
        with _client(base, tokens[0]) as http:
            first = _call(http, "read_file", {"path": "notes.txt"})
            for _ in range(20):
                _call(http, "read_file", {"path": "notes.txt"})
        with _client(base, readers[0]) as http:
            probe = _call(http, "http_request", DENIED)
        if first.get("status") != "succeeded" or probe.get("status") != "denied":
            raise SystemExit(f"unexpected warm-up answers: {first.get('status')} / {probe}")
        # Workers settle after their start (probes, discovery) before anything is metered.
        time.sleep(5)
        meter = Meter(_children(console.process.pid), _postgresql_root())
        detail = f"/api/v1/invocations/{first['id']}/"

        phases: list[tuple[str, list[str], Callable[[httpx.Client], str | None]]] = [
            (
                "an agent reads one invocation (GET, authenticated)",
                [tokens[0]] * CLIENTS,
                lambda http: _unless(http.get(detail).json(), "succeeded"),
            ),
            (
                "a call the policy denies (decided, recorded, audited; no worker)",
                readers,
                lambda http: _unless(_call(http, "http_request", DENIED), "denied"),
            ),
            (
                "a governed read_file, waited for",
                tokens,
                lambda http: _unless(_call(http, "read_file", {"path": "notes.txt"}), "succeeded"),
            ),
        ]
        for figure, who, request in phases:
            before, started = meter.read(), time.monotonic()
            count = _loop(base, who, request)
            rate = count / (time.monotonic() - started)
            emit(_row(figure, meter.per_op(before, count), count, rate))
        emit(_noop_tasks(meter))


if __name__ == "__main__":
    main()
