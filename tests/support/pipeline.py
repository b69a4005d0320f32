"""A daphne and a Celery worker of a test module's own, started with a config file.

The shared pipeline (``tests/conftest.py``) runs without a config file; a module
that needs approval rules or tool settings starts this pair instead, on a Redis
database of its own so its broker, live events and heartbeats never mix with
the shared pipeline's.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from common.testing import free_port, http_status, python_argv, running, wait_until


def own_redis(url: str, db: int) -> str:
    """``url`` with its Redis database number replaced by ``db``."""
    base, _, query = url.partition("?")
    params = [p for p in query.split("&") if p and not p.startswith("db=")]
    return base + "?" + "&".join([*params, f"db={db}"])


@dataclass
class Pipeline:
    """daphne's base URL, and the Redis database the pair's broker uses."""

    url: str
    broker: redis.Redis

    def idle(self) -> bool:
        """No task waiting in any queue, and none taken but not yet acknowledged."""
        from synthorg_site.celery import QUEUES
        from tools_app.worker.machine import MACHINE_QUEUE_PREFIX

        # Work bound to one machine (a desktop session's) waits in that machine's queue.
        machines = list(self.broker.scan_iter(f"{MACHINE_QUEUE_PREFIX}*"))
        waiting = sum(int(self.broker.llen(queue)) for queue in [*QUEUES, *machines])
        return waiting == 0 and int(self.broker.hlen("unacked")) == 0

    def settle(self) -> None:
        """Wait until the worker has finished what a test started (before rows are emptied)."""
        wait_until(self.idle, timeout=60, what="the configured worker to go idle")


@contextmanager
def configured_pipeline(
    test_env: dict[str, str], root: Path, config: dict[str, Any], *, redis_db: int
) -> Iterator[Pipeline]:
    """Start the pair with ``config`` (written as JSON, which is YAML)."""
    path = root / "synthorg.yaml"
    path.write_text(json.dumps(config))
    env = dict(
        test_env,
        SYNTHORG_CONFIG=str(path),
        REDIS_URL=own_redis(test_env["REDIS_URL"], redis_db),
    )
    redis.Redis.from_url(env["REDIS_URL"]).flushdb()
    name = f"configured-worker-{redis_db}-{os.getpid()}@localhost"
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
        pipeline = Pipeline(url, heartbeats)
        yield pipeline
        pipeline.settle()


def pipeline_fixtures(name: str, config: dict[str, Any], *, redis_db: int) -> tuple[Any, ...]:
    """A module's fixtures for its own pipeline with ``config``: ``pipeline`` (started once
    for the module), ``daphne_server`` (its web node, for the shared API fixtures) and an
    autouse ``_settled`` (each test's calls end before the next). Assign them by name:
    ``pipeline, daphne_server, _settled = pipeline_fixtures(...)``."""
    import pytest

    @pytest.fixture(scope="module")
    def pipeline(
        test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
    ) -> Iterator[Pipeline]:
        root = tmp_path_factory.mktemp(name)
        with configured_pipeline(test_env, root, config, redis_db=redis_db) as started:
            yield started

    @pytest.fixture(scope="module")
    def daphne_server(pipeline: Pipeline) -> str:
        return pipeline.url

    @pytest.fixture(autouse=True)
    def _settled(pipeline: Pipeline) -> Iterator[None]:
        yield
        pipeline.settle()

    return pipeline, daphne_server, _settled


def call_answer(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A call's answer: at once when it asks a person (a waiting answer would be held to
    its end), else once it has finished (a queued or running call is waited for)."""
    response = client.call(tool, arguments, idempotency_key=uuid.uuid4().hex, wait=0)
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    for _ in range(3):  # bounded: the call's own limit is far below this
        if answer["status"] not in ("queued", "running"):
            break
        answer = client.get(answer["id"], wait=30).json()
    return answer


def call_finished(client: Any, invocation: str) -> dict[str, Any]:
    """The invocation once it has ended (a person's decision included)."""
    answer: dict[str, Any] = client.get(invocation, wait=30).json()
    for _ in range(3):
        if answer["status"] not in ("queued", "running", "pending_approval"):
            break
        answer = client.get(invocation, wait=30).json()
    return answer


def call_ended(
    client: Any, tool: str, arguments: dict[str, Any], *, wait: int = 60
) -> dict[str, Any]:
    """A call's answer once it has run (for calls that ask nobody: a waiting answer of a
    call that asks a person is held to its end, see ``call_answer``)."""
    response = client.call(tool, arguments, idempotency_key=uuid.uuid4().hex, wait=wait)
    assert response.status_code in (200, 201), response.text
    answer: dict[str, Any] = response.json()
    for _ in range(5):  # a loaded machine: wait as long as a person would
        if answer["status"] not in ("queued", "running"):
            break
        answer = client.get(answer["id"], wait=60).json()
    return answer
