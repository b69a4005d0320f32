"""The audit log at scale: 1,000,000 events in PostgreSQL, read through a real daphne.

Inserts the events in one SQL statement (generate_series: 50 agents, 20 tools, three
outcomes, 30 days), starts daphne on the database in the environment, and measures:

- the filtered list page /audit/: p50 and p95 over 100 requests across ten filter sets,
  each followed a few keyset pages deep (goal: p95 <= 150 ms);
- a full CSV export of every event: rows/s and the peak resident memory of the daphne
  process while it streams (goals: >= 50,000 rows/s, peak < 150 MB);
- a full JSON Lines export likewise (no goal of its own).

The peak is the kernel's high-water mark of the process's resident set (VmHWM), reset
just before each export through /proc/PID/clear_refs, so no spike between two samples
is missed; where that file cannot be written, resident memory is sampled every 20 ms.
The daphne process's resident memory at rest, after the list pages, is reported beside
it: the peak holds the whole serving process, not only what the export added.

Needs PostgreSQL (DATABASE_URL): `make bench` provides a private one. The inserted rows
are not hash-chained; the database is the benchmark's own.
"""

from __future__ import annotations

import csv
import http.client
import io
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

from django.db import connection  # noqa: E402

from audit_app.models import AuditEvent  # noqa: E402
from bench.measure import pct as percentile  # noqa: E402
from common.testing import free_port, http_status, python_argv, running, wait_until  # noqa: E402
from trust_app.services.agents import person_create, person_token_issue  # noqa: E402

EVENTS = 1_000_000
LIST_REQUESTS = 100
PAGES_DEEP = 5
RSS_SAMPLE_SECONDS = 0.02

INSERT_SQL = """
INSERT INTO tools_app_auditevent (
    created_at, kind, actor_type, actor_id, actor_name, agent_id, agent_name, invocation_id,
    tool, category, action_type, arguments_hash, outcome, status, reason, rule, duration_ms,
    request_id, data, prev_hash, hash)
SELECT
    now() - (%(events)s - i) * interval '2.592 seconds',
    CASE WHEN i %% 3 = 0 THEN 'invocation.finished' ELSE 'invocation.decided' END,
    'agent', (i %% 50)::text, 'bench-agent-' || (i %% 50), NULL, 'bench-agent-' || (i %% 50),
    md5('inv' || (i / 3))::uuid,
    'bench_tool_' || (i %% 20),
    (ARRAY['file_system','web','terminal','code_execution','version_control'])[1 + i %% 5],
    (ARRAY['file:read','net:http','shell:exec','code:run','vcs:read'])[1 + i %% 5],
    md5('args' || i) || md5('args2' || i),
    (ARRAY['allow','allow','deny','require_approval'])[1 + i %% 4],
    (ARRAY['queued','succeeded','denied','pending_approval'])[1 + i %% 4],
    CASE WHEN i %% 4 = 2 THEN 'host h' || (i %% 997) || '.example.com is not on the allowlist'
         ELSE 'level standard permits the category' END,
    (ARRAY['level','level','network','approval'])[1 + i %% 4],
    i %% 5000, md5('req' || i),
    jsonb_build_object('trace', jsonb_build_array('step one', 'step two'), 'n', i),
    md5('prev' || i) || md5('prev2' || i),
    md5('hash' || i) || md5('hash2' || i)
FROM generate_series(1, %(events)s) AS i
"""

FILTER_SETS: tuple[dict[str, str], ...] = (
    {},
    {"agent": "bench-agent-7"},
    {"tool": "bench_tool_3"},
    {"outcome": "deny"},
    {"agent": "bench-agent-12", "outcome": "deny"},
    {"category": "web", "status": "denied"},
    {"action_type": "shell:exec"},
    {"actor": "bench-agent-33", "kind": "invocation.decided"},
    {"q": "h42.example.com"},
    {"since": "2000-01-01T00:00:00Z", "until": "2100-01-01T00:00:00Z", "outcome": "allow"},
)


def seed() -> int:
    """Insert the events unless a previous run left them; returns the table's row count."""
    have = AuditEvent.objects.filter(agent_name__startswith="bench-agent-").count()
    if have < EVENTS:
        started = time.monotonic()
        with connection.cursor() as cursor:
            # Building each index once after the insert is far faster than keeping
            # sixteen of them (one a trigram GIN) up to date row by row.
            cursor.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s "
                "AND indexname NOT IN (SELECT conname FROM pg_constraint)",
                ["tools_app_auditevent"],
            )
            indexes = cursor.fetchall()
            for name, _ in indexes:
                cursor.execute(f'DROP INDEX "{name}"')
            cursor.execute(INSERT_SQL, {"events": EVENTS - have})
            inserted = time.monotonic()
            cursor.execute("SET maintenance_work_mem = '256MB'")
            for _, definition in indexes:
                cursor.execute(definition)
            cursor.execute("ANALYZE tools_app_auditevent")
        print(f"inserted {EVENTS - have} events in {inserted - started:.1f}s, built "
              f"{len(indexes)} indexes in {time.monotonic() - inserted:.1f}s",
              file=sys.stderr)  # fmt: skip
    return AuditEvent.objects.count()


def status_kib(pid: int, field: str) -> int:
    """One memory figure (KiB) of /proc/PID/status, e.g. VmRSS, VmHWM, RssAnon."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def rss_kib(pid: int) -> int:
    return status_kib(pid, "VmRSS")


def high_water_mark_reset(pid: int) -> bool:
    """Restart the kernel's peak resident set count (VmHWM) at the current size."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class PeakRss(threading.Thread):
    """Samples a process's resident memory until stopped; keeps the peak."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self._stop_event = pid, 0, threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.peak = max(self.peak, rss_kib(self.pid))
            time.sleep(RSS_SAMPLE_SECONDS)

    def stop(self) -> int:
        self._stop_event.set()
        self.join()
        return self.peak


def get(conn: http.client.HTTPConnection, path: str, token: str) -> tuple[int, bytes, float]:
    started = time.perf_counter()
    conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    response = conn.getresponse()
    body = response.read()
    return response.status, body, (time.perf_counter() - started) * 1000


def list_pages(port: int, token: str) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for _ in range(10):  # warm the connection pool and the caches
        get(conn, "/audit/", token)
    samples: list[float] = []
    while len(samples) < LIST_REQUESTS:
        for filters in FILTER_SETS:
            path = "/audit/?" + urlencode(filters)
            for _ in range(PAGES_DEEP):
                status, body, elapsed = get(conn, path, token)
                if status != 200:
                    raise SystemExit(f"{path} answered {status}: {body[:300]!r}")
                samples.append(elapsed)
                found = re.search(rb'id="next-page" href="([^"]+)"', body)
                if found is None or len(samples) >= LIST_REQUESTS:
                    break
                path = found.group(1).decode().replace("&amp;", "&")
            if len(samples) >= LIST_REQUESTS:
                break
    conn.close()
    return samples


@dataclass
class Export:
    rows: int
    seconds: float
    rest_kib: int  # resident before the export
    rest_anon_kib: int  # of which anonymous memory (not shared library pages)
    peak_kib: int
    peak_how: str


def export_all(port: int, token: str, pid: int, fmt: str) -> Export:
    """A full export in `fmt` (csv or jsonl): rows, seconds and daphne's memory."""
    rest, rest_anon = rss_kib(pid), status_kib(pid, "RssAnon")
    exact = high_water_mark_reset(pid)
    sampler = PeakRss(pid)
    sampler.start()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    started = time.perf_counter()
    conn.request("GET", f"/audit/export.{fmt}", headers={"Authorization": f"Bearer {token}"})
    response = conn.getresponse()
    if response.status != 200:
        raise SystemExit(f"export answered {response.status}")
    body = tempfile.TemporaryFile()  # noqa: SIM115 - closed below, after counting
    while chunk := response.read(1 << 20):
        body.write(chunk)
    elapsed = time.perf_counter() - started
    peak = max(sampler.stop(), status_kib(pid, "VmHWM") if exact else 0)
    conn.close()
    body.seek(0)
    # Counted after the clock stops: a CSV cell may hold a new line, so parse, do not
    # count lines; a JSON Lines record never holds a raw one.
    if fmt == "csv":
        text = io.TextIOWrapper(body, encoding="utf-8", newline="")
        rows = sum(1 for _ in csv.reader(text)) - 1
        text.close()
    else:
        rows = sum(block.count(b"\n") for block in iter(lambda: body.read(1 << 20), b""))
        body.close()
    how = "VmHWM reset before the export" if exact else f"VmRSS every {RSS_SAMPLE_SECONDS}s"
    return Export(rows, elapsed, rest, rest_anon, peak, how)


def export_figure(name: str, export: Export, goals: str) -> dict[str, object]:
    mb = 1024
    return {
        "figure": f"audit {name} export, full table, streamed",
        "unit": "rows/s",
        "rate": export.rows / export.seconds,
        "note": f"{export.rows} rows in {export.seconds:.1f}s; daphne resident "
        f"{export.rest_kib / mb:.0f} MB at rest ({export.rest_anon_kib / mb:.0f} MB "
        f"anonymous), peak {export.peak_kib / mb:.0f} MB ({export.peak_how}); {goals}",
    }


def main() -> None:
    if connection.vendor != "postgresql":
        raise SystemExit("bench_audit needs PostgreSQL: set DATABASE_URL (make bench does)")
    seed()
    person = person_create(username=f"bench-auditor-{os.getpid()}", role="auditor", password=None)
    token = person_token_issue(person=person)
    total = AuditEvent.objects.count()
    env = dict(os.environ, LOG_LEVEL="WARNING")
    port = free_port()
    tmp = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    with running(daphne, env=env, log_path=tmp / "daphne.log") as server:
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: http_status(base + "/healthz") in (200, 503), timeout=60,
                   what="daphne to answer")  # fmt: skip
        samples = list_pages(port, token)
        csv_export = export_all(port, token, server.process.pid, "csv")
        jsonl_export = export_all(port, token, server.process.pid, "jsonl")
    print(json.dumps({
        "figure": "audit list page, filtered, keyset pages (1M events)",
        "unit": "ms",
        "p50": statistics.median(samples),
        "p95": percentile(samples, 0.95),
        "rate": len(samples) / (sum(samples) / 1000),
        "note": f"{len(samples)} requests over {len(FILTER_SETS)} filter sets, up to "
                f"{PAGES_DEEP} pages deep; goal p95 <= 150 ms",
    }))  # fmt: skip
    print(json.dumps(export_figure("CSV", csv_export, "goals >= 50,000 rows/s, peak < 150 MB")))
    print(json.dumps(export_figure("JSON Lines", jsonl_export, "no goal")))
    for name, export in (("CSV", csv_export), ("JSON Lines", jsonl_export)):
        if export.rows != total:
            raise SystemExit(f"the {name} export held {export.rows} rows, the table {total}")


if __name__ == "__main__":
    main()
