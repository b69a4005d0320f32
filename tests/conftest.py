"""Shared fixtures: a real Celery worker and a real daphne server on the test database."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from common.testing import (
    RunningProcess,
    database_url_for,
    free_port,
    http_status,
    python_argv,
    running,
    wait_until,
)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """Forget any connection pool made before the test database exists.

    Django keeps PostgreSQL pools per alias on the class, built from the settings of
    the moment: a pool made while collecting (any query, even one the blocker then
    refuses, builds it) would keep pointing at the real database after the test
    database replaces it, and the migrations would run there instead.
    """
    from django.db import connections

    for connection in connections.all():
        connection.close()
        close_pool = getattr(connection, "close_pool", None)
        if close_pool is not None:
            close_pool()


def pytest_configure(config: pytest.Config) -> None:
    """A transactional test's closing flush is tried again when PostgreSQL picks it as a
    deadlock's victim: its TRUNCATE locks every table while processes the test started
    (workers, beat) may still be finishing a transaction that holds two of them."""
    import time

    from django.core.management.commands import flush

    handle = flush.Command.handle

    def deadlocked(exc: BaseException) -> bool:
        # flush wraps the database's error in a CommandError.
        return any("deadlock detected" in str(e) for e in (exc, exc.__cause__) if e)

    def handle_until_done(self: flush.Command, *args: object, **options: object) -> None:
        for attempt in range(5):
            try:
                return handle(self, *args, **options)
            except Exception as exc:
                if not deadlocked(exc) or attempt == 4:
                    raise
                time.sleep(0.5)
        return None

    flush.Command.handle = handle_until_done  # type: ignore[method-assign]


# Modules that start whole consoles, clusters or images are the longest: with several
# workers (scripts/test.sh) they are handed out first, so that none of them is left to
# run alone at the end while the other workers are idle. The browser tests come last:
# Playwright's sync API keeps an event loop running in its process for the rest of the
# session, which no other test there must inherit.
LONGEST_FIRST = ("acceptance", "faults", "cluster", "deploy")
LAST = ("browser",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        top = Path(str(item.path)).relative_to(Path(__file__).parent).parts[0]
        if top in LONGEST_FIRST:
            return LONGEST_FIRST.index(top)
        return len(LONGEST_FIRST) + (1 if top in LAST else 0)

    items.sort(key=rank)  # stable: each module's tests keep their order


@pytest.fixture(scope="session")
def loopback_tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A certificate and key for 127.0.0.1 that the session's workers trust as a real
    server's (``SYNTHORG_EGRESS_UPSTREAM_CA_FILE``): loopback HTTPS servers of the tests."""
    from tests.acceptance.certificates import self_signed

    return self_signed(tmp_path_factory.mktemp("loopback-tls"))


@pytest.fixture(scope="session")
def test_env(
    django_db_setup: None, django_db_blocker: object, loopback_tls: tuple[Path, Path]
) -> dict[str, str]:
    """The environment a child process needs to share this session's database and Redis."""
    env = dict(os.environ)
    env["SYNTHORG_EGRESS_UPSTREAM_CA_FILE"] = str(loopback_tls[0])
    env["DATABASE_URL"] = database_url_for(settings.DATABASES["default"])
    env["REDIS_URL"] = settings.REDIS_URL
    env["SYNTHORG_ENV"] = "test"
    env["SYNTHORG_VAR_DIR"] = str(settings.VAR_DIR)
    env.setdefault("LOG_FORMAT", "json")
    # A secret-named variable of the console's own environment, as a deployment has:
    # its value must never reach an agent (tests/tools_app/test_agent_view.py).
    env["SYNTHORG_TEST_DEPLOY_TOKEN"] = secrets.token_urlsafe(24)
    return env


@pytest.fixture(scope="session")
def celery_worker_process(
    test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProcess]:
    """A real Celery worker consuming every queue, against the test database."""
    from common.platform.heartbeat import worker_heartbeats
    from synthorg_site.celery import QUEUES

    name = f"test-worker-{os.getpid()}@localhost"
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    argv = python_argv(
        "-m", "celery", "-A", "synthorg_site", "worker", "-Q", ",".join(QUEUES),
        "-n", name, "--without-gossip", "--without-mingle", "-l", "INFO",
    )  # fmt: skip
    with running(argv, env=test_env, log_path=log) as worker:
        wait_until(
            lambda: any(b.name == name for b in worker_heartbeats()) or _died(worker),
            timeout=60,
            what="the Celery worker's heartbeat",
        )
        assert worker.process.poll() is None, worker.output()
        _shared_worker["running"] = True
        try:
            yield worker
        finally:
            _shared_worker["running"] = False


# Once the session's worker runs, any test may feed it (a call submitted through
# daphne with wait=0 runs after the test returns), not only tests that ask for it.
_shared_worker: dict[str, bool] = {"running": False}


@pytest.fixture(scope="session")
def daphne_server(
    test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A real daphne serving the ASGI app on a free loopback port; yields its base URL."""
    port = free_port()
    log = tmp_path_factory.mktemp("daphne") / "daphne.log"
    argv = python_argv("-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                       "synthorg_site.asgi:application")  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with running(argv, env=test_env, log_path=log) as server:
        wait_until(
            lambda: http_status(url + "/healthz") in (200, 503) or _died(server),
            timeout=60,
            what="daphne to answer",
        )
        assert server.process.poll() is None, server.output()
        yield url


def _died(process: RunningProcess) -> bool:
    if process.process.poll() is not None:
        raise AssertionError(f"process exited early:\n{process.output()[-4000:]}")
    return False


@pytest.fixture
def var_dir() -> Path:
    return Path(settings.VAR_DIR)


def _celery_idle() -> bool:
    """No task waiting in any queue, and none taken but not yet acknowledged."""
    from synthorg_site.celery import QUEUES, app

    with app.connection_for_read() as connection:
        channel = connection.default_channel
        client = channel.client
        waiting = sum(client.llen(queue) for queue in QUEUES)
        return waiting == 0 and client.hlen(channel.unacked_key) == 0


@pytest.fixture(autouse=True)
def _config_comes_back() -> Iterator[None]:
    """The config a test loaded (its own SYNTHORG_CONFIG) is not left cached for the
    tests after it: it is loaded again from the restored setting when it changed."""
    from common.settings_config import config_reload, synthorg_config

    path = settings.SYNTHORG_CONFIG
    before = synthorg_config()
    yield
    if path != settings.SYNTHORG_CONFIG:
        settings.SYNTHORG_CONFIG = path
    if synthorg_config() is not before:
        config_reload()


@pytest.fixture(autouse=True)
def _celery_worker_settles(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that used the worker ends only when the worker has finished what the
    test started (trust evaluations and sweeps included), so emptying the
    database after it never races a task still writing to it."""
    yield
    if "celery_worker_process" in request.fixturenames or _shared_worker["running"]:
        wait_until(_celery_idle, timeout=60, what="the Celery worker to finish its tasks")
