"""Database tools end to end: a daphne and a worker whose config names the connections.

The shared test pipeline runs without a config file, so this module starts its own
pair with a config naming the scratch database, on a Redis database of its own: its
broker, live events and heartbeats never mix with the shared pipeline's.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator

import pytest
import redis

from common.testing import free_port, http_status, python_argv, running, wait_until
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.builtin.database.test_support import PASSWORD, ROWS, pg_scalar, pg_url
from tests.tools_app.sandbox.proc import processes_with_marker

__all__ = ["pg_url"]

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# The agent API fixtures, shared with the API tests; `daphne_server` below is this module's.
make_agent = api_fixtures.make_agent
# A Redis database no other test uses (the test Redis has sixteen).
REDIS_DB = 13
QUERY_MEMORY_MB = 96
# How far a worker process's peak memory may rise during calls that ask for a gigabyte.
WORKER_RSS_GROWTH_CEILING_KIB = 64 * 1024


def _own_redis(url: str) -> str:
    base, _, query = url.partition("?")
    params = [p for p in query.split("&") if p and not p.startswith("db=")]
    return base + "?" + "&".join([*params, f"db={REDIS_DB}"])


@pytest.fixture(scope="module")
def daphne_server(
    test_env: dict[str, str], pg_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A daphne and a worker configured with `main` (read) and `main_rw` (write)."""
    root = tmp_path_factory.mktemp("db-pipeline")
    config = root / "synthorg.yaml"
    lite = root / "lite.db"
    with sqlite3.connect(lite) as handle:
        handle.execute("CREATE TABLE items (id INTEGER PRIMARY KEY)")
        handle.executemany("INSERT INTO items VALUES (?)", [(i,) for i in range(ROWS)])
    connections = {"main": {"url": pg_url}, "lite": {"url": f"sqlite:///{lite}"}}
    # JSON is YAML: the URL needs no quoting rules of its own.
    config.write_text(
        json.dumps(
            {
                "tools": {
                    # No value limit below the memory ceiling: the ceiling must hold alone.
                    "sql_query": {
                        "connections": connections,
                        "max_rows": 5,
                        "max_value_bytes": 1_000_000_000,
                        "memory_limit_mb": QUERY_MEMORY_MB,
                    },
                    "schema_inspect": {"connections": connections},
                    "db_mutate": {"connections": {"main_rw": {"url": pg_url}}},
                }
            }
        )
    )
    env = dict(test_env, SYNTHORG_CONFIG=str(config), REDIS_URL=_own_redis(test_env["REDIS_URL"]))
    redis.Redis.from_url(env["REDIS_URL"]).flushdb()
    name = f"db-worker-{os.getpid()}@localhost"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    from synthorg_site.celery import QUEUES

    worker_argv = python_argv(
        "-m", "celery", "-A", "synthorg_site", "worker", "-Q", ",".join(QUEUES),
        "-n", name, "--without-gossip", "--without-mingle", "-l", "INFO",
    )  # fmt: skip
    daphne_argv = python_argv("-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                              "synthorg_site.asgi:application")  # fmt: skip
    heartbeats = redis.Redis.from_url(env["REDIS_URL"])
    with (
        running(worker_argv, env=env, log_path=root / "worker.log") as worker,
        running(daphne_argv, env=env, log_path=root / "daphne.log") as server,
    ):
        wait_until(
            lambda: (
                bool(heartbeats.exists(f"synthorg:heartbeat:worker:{name}"))
                or worker.process.poll() is not None
            ),
            timeout=60,
            what="the configured worker's heartbeat",
        )
        wait_until(
            lambda: (
                http_status(url + "/healthz") in (200, 503) or server.process.poll() is not None
            ),
            timeout=60,
            what="the configured daphne",
        )
        assert worker.process.poll() is None, worker.output()[-4000:]
        assert server.process.poll() is None, server.output()[-4000:]
        yield url


def test_sql_query_reads_rows_and_never_shows_the_password(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent("standard")
    answer = client.call(
        "sql_query", {"connection": "main", "query": "SELECT id, name FROM items ORDER BY id"},
        wait=30,
    ).json()  # fmt: skip
    assert answer["status"] == "succeeded", answer
    result = answer["result"]
    assert result["structured"]["columns"] == ["id", "name"]
    assert result["structured"]["rows"][0] == [1, "item 1"]
    assert result["structured"]["truncated"] is True and result["truncated"] is True
    assert len(result["structured"]["rows"]) == 5

    leak = client.call(
        "sql_query", {"connection": "main", "query": f"SELECT '{PASSWORD}' AS pw"}, wait=30
    ).json()
    assert leak["status"] == "succeeded", leak
    assert PASSWORD not in json.dumps(leak)


def test_schema_inspect_lists_the_scratch_tables(make_agent: Callable[..., AgentClient]) -> None:
    answer = (
        make_agent("standard")
        .call("schema_inspect", {"connection": "main", "table": "items"}, wait=30)
        .json()
    )
    assert answer["status"] == "succeeded", answer
    (table,) = answer["result"]["structured"]["tables"]
    assert [c["name"] for c in table["columns"]] == ["id", "name", "note"]


def test_db_mutate_writes_on_its_own_connection(
    make_agent: Callable[..., AgentClient], pg_url: str
) -> None:
    client = make_agent("standard", autonomy="full")
    answer = client.call(
        "db_mutate",
        {"connection": "main_rw", "query": "INSERT INTO trail (what) VALUES ('e2e') RETURNING id"},
        idempotency_key="e2e-insert-1",
        wait=30,
    ).json()
    assert answer["status"] == "succeeded", answer
    assert answer["result"]["structured"]["row_count"] == 1
    assert pg_scalar(pg_url, "SELECT count(*) FROM trail WHERE what = 'e2e'") == 1
    # The write connection is db_mutate's alone; sql_query does not know it.
    read = client.call("sql_query", {"connection": "main_rw", "query": "SELECT 1"}, wait=30).json()
    assert read["error"]["code"] == "HOST_NOT_ALLOWED", read


def test_writes_and_unknown_connections_are_refused_end_to_end(
    make_agent: Callable[..., AgentClient], pg_url: str
) -> None:
    client = make_agent("standard")
    for arguments, code in (
        ({"connection": "main", "query": "DELETE FROM items"}, "INVALID_ARGUMENT"),
        ({"connection": "main", "query": "SELECT 1; DROP TABLE items"}, "INVALID_ARGUMENT"),
        ({"connection": "elsewhere", "query": "SELECT 1"}, "HOST_NOT_ALLOWED"),
    ):
        answer = client.call("sql_query", arguments, wait=30).json()
        assert answer["status"] == "failed", answer
        assert answer["error"]["code"] == code
    assert pg_scalar(pg_url, "SELECT count(*) FROM items") == ROWS


def _peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="utf-8") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def _reset_peak_rss(pid: int) -> None:
    with open(f"/proc/{pid}/clear_refs", "w", encoding="utf-8") as handle:
        handle.write("5")


@pytest.mark.parametrize(
    "query",
    [
        "SELECT randomblob(1000000000)",
        "SELECT zeroblob(1000000000)",
        "WITH RECURSIVE r(n, s) AS (SELECT 1, randomblob(10000000) "
        "UNION ALL SELECT n + 1, s || randomblob(10000000) FROM r WHERE n < 100) "
        "SELECT n, length(s) FROM r",
    ],
)
def test_a_gigabyte_query_fails_clearly_and_the_worker_stays_small(
    make_agent: Callable[..., AgentClient], query: str
) -> None:
    workers = processes_with_marker(f"db-worker-{os.getpid()}@localhost")
    assert workers  # the module's worker and its pool processes
    before = {}
    for pid in workers:
        _reset_peak_rss(pid)
        before[pid] = _peak_rss_kib(pid)
    client = make_agent("standard")
    answer = client.call("sql_query", {"connection": "lite", "query": query}, wait=60).json()
    assert answer["status"] == "failed", answer
    assert answer["error"]["code"] == "MEMORY_EXCEEDED", answer
    assert f"{QUERY_MEMORY_MB} MiB" in answer["error"]["message"]
    grown = {pid: _peak_rss_kib(pid) - kib for pid, kib in before.items()}
    assert max(grown.values()) < WORKER_RSS_GROWTH_CEILING_KIB, grown
    control = client.call(
        "sql_query", {"connection": "lite", "query": "SELECT count(*) FROM items"}, wait=30
    ).json()
    assert control["status"] == "succeeded", control
    assert control["result"]["structured"]["rows"] == [[ROWS]]
