"""The engine with many agents at once: latency, CPU per call by process, fairness, and
calls that wait in their sandboxes.

Starts the console as `make run` does (``python -m synthorg_site.launcher``: web, two
worker processes, beat) on the database and Redis of the environment, and drives it through
REST only, so the same script measures any release of the console:
- ``read_file`` and ``shell_command true`` end to end (one client, waiting for the
  result): p50 and p99;
- a closed loop of CLIENTS agents calling read_file for LOAD_SECONDS: calls/s, and the
  CPU per call of each process of the console (web, worker with its sandboxes, beat,
  the rest);
- fairness: agent A keeps LONG_CALLS ``sleep`` calls going (its cap lets the rest
  wait); agent B's read_file p50 meanwhile, over its idle p50 in the same run;
- waiting calls: SLEEPERS calls that each sleep SLEEP_SECONDS in their sandbox, from
  SLEEPERS / 4 agents: the most running at once and the time until all ended. Runs
  at most SLEEPERS_BUDGET_SECONDS; what has not started by then is cancelled and
  counted.
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

import httpx  # noqa: E402
from django.db.models import Count  # noqa: E402

from bench.measure import pct, tree_cpu_seconds  # noqa: E402
from common.testing import free_port, http_status, python_argv, running, wait_until  # noqa: E402
from tools_app.models import Invocation  # noqa: E402
from trust_app.services.agents import agent_create, workspace_grant  # noqa: E402

LATENCY_CALLS = 200
WARMUP = 20
CLIENTS = 8
LOAD_SECONDS = 20
LONG_CALLS = 8
LONG_SECONDS = 25
FAIR_CALLS = 60
SLEEPERS = 500
SLEEP_SECONDS = 10
SLEEPERS_BUDGET_SECONDS = 90
OPEN = ("queued", "running", "pending_approval")
# Tools whose calls need an idempotency key (their contracts say `required`).
KEYED_TOOLS = frozenset({"write_file"})
refused: collections.Counter[str] = collections.Counter()


def console_env() -> dict[str, str]:
    """The environment a benchmarked console starts with: quiet logs, no agent rate
    limit, a free loopback port, two worker processes."""
    return dict(
        os.environ,
        LOG_LEVEL="WARNING",
        SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE="1000000",
        PORT=str(free_port()),
        HOST="127.0.0.1",
        # Two worker processes (one per core), as the engine's figures are stated; a
        # release whose launcher has no such setting runs its own default (two prefork
        # processes).
        SYNTHORG_WORKERS="2",
    )


def _agent(prefix: str) -> tuple[str, Path]:
    created = agent_create(
        name=f"{prefix}-{uuid.uuid4().hex[:8]}", access_level="elevated", autonomy="full"
    )
    workspace = Path(created.agent.workspace)
    (workspace / "notes.txt").write_text("a line of notes\n" * 20)
    workspace_grant(workspace)
    return created.token, workspace


def _client(base: str, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=httpx.Timeout(90)
    )


def _call(http: httpx.Client, tool: str, arguments: dict[str, Any], wait: int = 60) -> Any:
    body = {"tool": tool, "arguments": arguments, "wait": wait}
    if tool in KEYED_TOOLS:
        body["idempotency_key"] = uuid.uuid4().hex
    return http.post("/api/v1/invocations/", json=body).json()


def _latency(http: httpx.Client, tool: str, arguments: dict[str, Any], calls: int) -> list[float]:
    samples = []
    for i in range(WARMUP + calls):
        started = time.perf_counter()
        answer = _call(http, tool, arguments)
        elapsed = (time.perf_counter() - started) * 1000
        if answer.get("status") != "succeeded":
            raise SystemExit(f"{tool} did not succeed: {answer}")
        if i >= WARMUP:
            samples.append(elapsed)
    return samples


def _row(figure: str, samples: list[float], note: str) -> dict[str, object]:
    return {
        "figure": figure,
        "unit": "ms",
        "p50": statistics.median(samples),
        "p99": pct(samples, 0.99),
        "note": note,
    }


def _children(root: int) -> dict[str, list[int]]:
    """The launcher's children by role (web, worker, beat, redis), from their command lines."""
    roles: dict[str, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rpartition(")")[2].split()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat[1]) != root:
            continue
        line = b" ".join(argv).decode(errors="replace")
        role = next((r for r in ("daphne", "worker", "beat", "redis") if r in line), "other")
        roles.setdefault({"daphne": "web"}.get(role, role), []).append(int(entry.name))
    return roles


def _postgresql_root() -> int | None:
    """The main process of the PostgreSQL server the bench's database lives on, when this
    machine runs it (its data directory readable here); None otherwise (SQLite, a remote
    server)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SHOW data_directory")
        row = cursor.fetchone()
    try:
        return int((Path(row[0]) / "postmaster.pid").read_text().split()[0])
    except (OSError, TypeError, ValueError, IndexError):
        return None


def _cpu_by_role(roles: dict[str, list[int]]) -> dict[str, float]:
    return {role: sum(tree_cpu_seconds(pid) for pid in pids) for role, pids in roles.items()}


def _load(base: str, tokens: list[str], seconds: float) -> tuple[list[str], int]:
    """Closed loop of read_file calls; the ids submitted and how many did not succeed
    (answers without an invocation are counted by error code in ``refused``)."""
    submitted: list[str] = []
    failed = 0
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(token: str) -> None:
        nonlocal failed
        with _client(base, token) as http:
            while time.monotonic() < deadline:
                answer = _call(http, "read_file", {"path": "notes.txt"})
                with lock:
                    if answer.get("id"):
                        submitted.append(str(answer["id"]))
                    else:
                        refused[str(answer.get("error", {}).get("code"))] += 1
                    if answer.get("status") != "succeeded":
                        failed += 1

    threads = [threading.Thread(target=client, args=(t,)) for t in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return submitted, failed


def _outcomes(ids: list[str]) -> str:
    """How the calls ended, e.g. "succeeded 690, failed/sandbox_unavailable 3"."""
    rows = (
        Invocation.objects.filter(id__in=ids)
        .values("status", "error_code")
        .annotate(n=Count("id"))
        .order_by("-n")
    )
    return ", ".join(
        f"{r['status']}{'/' + r['error_code'] if r['error_code'] else ''} {r['n']}" for r in rows
    )


def _cancel_open(base: str, token: str, ids: list[str]) -> int:
    still = list(
        Invocation.objects.filter(id__in=ids, status__in=OPEN).values_list("id", flat=True)
    )
    with _client(base, token) as http:
        for invocation_id in still:
            http.post(f"/api/v1/invocations/{invocation_id}/cancel/")
    return len(still)


def _fairness(base: str) -> list[dict[str, object]]:
    token_a, _ = _agent("bench-fair-a")
    token_b, _ = _agent("bench-fair-b")
    with _client(base, token_b) as b:
        idle = _latency(b, "read_file", {"path": "notes.txt"}, FAIR_CALLS)
        with _client(base, token_a) as a:
            long_ids = [
                a.post(
                    "/api/v1/invocations/",
                    json={"tool": "shell_command",
                          "arguments": {"argv": ["sleep", str(LONG_SECONDS)]}},
                ).json()["id"]
                for _ in range(LONG_CALLS)
            ]  # fmt: skip
        wait_until(
            lambda: Invocation.objects.filter(id__in=long_ids, status="running").exists(),
            timeout=60,
            what="agent A's long calls to start",
        )
        busy_samples: list[float] = []
        end = time.monotonic() + LONG_SECONDS - 3
        while time.monotonic() < end and len(busy_samples) < FAIR_CALLS:
            started = time.perf_counter()
            answer = _call(b, "read_file", {"path": "notes.txt"})
            busy_samples.append((time.perf_counter() - started) * 1000)
            if answer.get("status") != "succeeded":
                break
    running_during = Invocation.objects.filter(id__in=long_ids, status="running").count()
    cancelled = _cancel_open(base, token_a, long_ids)
    idle_p50, busy_p50 = statistics.median(idle), statistics.median(busy_samples)
    return [
        {
            "figure": "fairness: B's read_file p50 while A runs long calls, over idle",
            "unit": "ratio",
            "p50": busy_p50 / idle_p50,
            "note": (
                f"B idle p50 {idle_p50:.1f} ms, while A busy {busy_p50:.1f} ms "
                f"({len(busy_samples)} calls); A asked for {LONG_CALLS} x sleep "
                f"{LONG_SECONDS}s, {running_during} running at the end, {cancelled} cancelled"
            ),
        }
    ]


def _sleepers(base: str, reader: httpx.Client, idle_p50: float) -> dict[str, object]:
    agents = [_agent("bench-sleep") for _ in range(SLEEPERS // 4)]
    by_agent: dict[str, list[str]] = {}

    def submit(token: str) -> None:
        with _client(base, token) as http:
            by_agent[token] = [
                http.post(
                    "/api/v1/invocations/",
                    json={"tool": "shell_command",
                          "arguments": {"argv": ["sleep", str(SLEEP_SECONDS)]}},
                ).json()["id"]
                for _ in range(4)
            ]  # fmt: skip

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(submit, [token for token, _ in agents]))
    submitted_in = time.monotonic() - started
    ids = [i for per_agent in by_agent.values() for i in per_agent]
    peak = 0
    reads: list[float] = []
    deadline = started + SLEEPERS_BUDGET_SECONDS
    rows = Invocation.objects.filter(id__in=ids)
    while time.monotonic() < deadline:
        peak = max(peak, rows.filter(status="running").count())
        if not rows.filter(status__in=OPEN).exists():
            break
        before = time.perf_counter()
        _call(reader, "read_file", {"path": "notes.txt"})
        reads.append((time.perf_counter() - before) * 1000)
        time.sleep(0.2)
    elapsed = time.monotonic() - started
    cancelled = sum(_cancel_open(base, token, own) for token, own in by_agent.items())
    ok = rows.filter(status="succeeded").count()
    read_p50 = statistics.median(reads) if reads else float("nan")
    return {
        "figure": f"{SLEEPERS} calls sleeping {SLEEP_SECONDS}s in their sandboxes",
        "unit": "running at once",
        "rate": float(peak),
        "note": (
            f"submitted in {submitted_in:.1f}s; {ok} succeeded in {elapsed:.0f}s "
            f"({_outcomes(ids)}), "
            f"{cancelled} cancelled unstarted at the {SLEEPERS_BUDGET_SECONDS}s budget; "
            f"read_file p50 meanwhile {read_p50:.1f} ms ({read_p50 / idle_p50:.2f}x idle)"
        ),
    }


def main() -> None:
    env = console_env()
    tmp = Path(tempfile.mkdtemp(prefix="bench-engine-"))
    base = f"http://127.0.0.1:{env['PORT']}"
    launcher = python_argv("-m", "synthorg_site.launcher")
    with running(launcher, env=env, log_path=tmp / "console.log") as console:
        wait_until(lambda: http_status(base + "/healthz") == 200, timeout=240, what="the console")
        emit: Callable[[dict[str, object]], None] = lambda r: print(json.dumps(r), flush=True)  # noqa: E731
        token, _ = _agent("bench-engine")
        with _client(base, token) as http:
            reads = _latency(http, "read_file", {"path": "notes.txt"}, LATENCY_CALLS)
            emit(_row("engine: read_file end to end (REST)", reads, "one client, wait"))
            written = {"path": "bench-out.txt", "content": "a line of output\n"}
            writes = _latency(http, "write_file", written, LATENCY_CALLS // 2)
            emit(_row("engine: write_file end to end (REST)", writes, "one client, wait"))
            shell = _latency(http, "shell_command", {"argv": ["true"]}, LATENCY_CALLS // 2)
            emit(_row("engine: shell_command true end to end (REST)", shell, "one client, wait"))
            roles = _children(console.process.pid)
            tokens = [_agent("bench-load")[0] for _ in range(CLIENTS)]
            database = _postgresql_root()
            database_before = tree_cpu_seconds(database) if database else 0.0
            before, started = _cpu_by_role(roles), time.monotonic()
            submitted, failed = _load(base, tokens, LOAD_SECONDS)
            elapsed = time.monotonic() - started
            after = _cpu_by_role(roles)
            database_after = tree_cpu_seconds(database) if database else 0.0
            done = Invocation.objects.filter(id__in=submitted, status="succeeded").count()
            calls = max(len(submitted), 1)
            per_role = {r: (after[r] - before.get(r, 0.0)) * 1000 / calls for r in after}
            emit(
                {
                    "figure": "engine: CPU per read_file call, every process of the console",
                    "unit": "ms",
                    "p50": sum(per_role.values()),
                    "rate": done / elapsed,
                    "note": (
                        f"{CLIENTS} clients {elapsed:.0f}s, {len(submitted)} calls, {failed} not "
                        f"succeeded ({_outcomes(submitted)}; refused {dict(refused)}); "
                        "rate is calls/s; "
                        + ", ".join(f"{r} {v:.1f}" for r, v in sorted(per_role.items()))
                    ),
                }
            )
            if database:
                emit(
                    {
                        "figure": "engine: PostgreSQL CPU per read_file call, the same load",
                        "unit": "ms",
                        "p50": (database_after - database_before) * 1000 / calls,
                        "note": "the database server's processes (not in the console's figure "
                        "above), counted when it runs on this machine",
                    }
                )
            for fair in _fairness(base):
                emit(fair)
            emit(_sleepers(base, http, statistics.median(reads)))


if __name__ == "__main__":
    main()
