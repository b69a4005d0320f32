"""A console of several nodes on one machine: web nodes, workers and beat, started by a
test on the suite's PostgreSQL and a Redis database of its own, loopback only.

Every process is the same program an operator runs (daphne, ``celery worker``,
``celery beat``) with the same ``DATABASE_URL`` and ``REDIS_URL``, which is all that
makes them one console.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from common.testing import RunningProcess, free_port, http_status, python_argv, running, wait_until
from tests.support.pipeline import own_redis


@dataclass
class Cluster:
    """The web nodes' base URLs, the workers, and the Redis database they share."""

    web: list[str]
    workers: list[RunningProcess]
    worker_names: list[str]
    broker_url: str
    root: Path
    env: dict[str, str]
    stack: ExitStack
    heartbeats: redis.Redis
    logs: list[Path] = field(default_factory=list)
    web_processes: list[RunningProcess] = field(default_factory=list)
    beat: RunningProcess | None = None

    def worker_of(self, pid: int) -> int:
        """The index of the worker whose process (or pool child) ``pid`` is."""
        parent = _parent_pid(pid)
        for index, worker in enumerate(self.workers):
            if worker.process.pid in (pid, parent):
                return index
        raise AssertionError(f"pid {pid} (parent {parent}) belongs to no worker of the cluster")

    def kill_worker(self, index: int) -> None:
        """SIGKILL a worker and its pool at once, as a node that loses power."""
        os.killpg(self.workers[index].process.pid, signal.SIGKILL)
        self.workers[index].process.wait(timeout=30)

    def restart_worker(self, index: int) -> None:
        self.workers[index] = self.stack.enter_context(
            _worker(self.env, self.root, self.worker_names[index], f"-{len(self.logs)}")
        )
        self.logs.append(self.workers[index].log_path)
        self.wait_for_heartbeat(self.worker_names[index])

    def kill_web(self, index: int) -> None:
        """SIGKILL a web node, as a machine that loses power."""
        os.killpg(self.web_processes[index].process.pid, signal.SIGKILL)
        self.web_processes[index].process.wait(timeout=30)

    def restart_web(self, index: int) -> None:
        """Start a web node again on its own port."""
        port = int(self.web[index].rsplit(":", 1)[1])
        self.web_processes[index] = self.stack.enter_context(
            _web(self.env, self.root, index, port, f"-{len(self.logs)}")
        )
        self.logs.append(self.web_processes[index].log_path)
        _wait_for_web(self.web[index])

    def kill_beat(self) -> None:
        assert self.beat is not None
        os.killpg(self.beat.process.pid, signal.SIGKILL)
        self.beat.process.wait(timeout=30)

    def restart_beat(self) -> None:
        self.beat = self.stack.enter_context(_beat(self.env, self.root, f"-{len(self.logs)}"))
        self.logs.append(self.beat.log_path)

    def wait_for_heartbeat(self, name: str) -> None:
        wait_until(
            lambda: bool(self.heartbeats.exists(f"synthorg:heartbeat:worker:{name}")),
            timeout=90,
            what=f"the heartbeat of {name}",
        )

    def outputs(self) -> str:
        return "\n".join(path.read_text(errors="replace")[-3000:] for path in self.logs)


def _parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


@contextmanager
def _worker(
    env: dict[str, str], root: Path, name: str, suffix: str = ""
) -> Iterator[RunningProcess]:
    from synthorg_site.celery import QUEUES

    argv = python_argv(
        "-m", "celery", "-A", "synthorg_site", "worker", "-Q", ",".join(QUEUES),
        "-n", name, "--without-gossip", "--without-mingle", "-l", "INFO",
    )  # fmt: skip
    with running(argv, env=env, log_path=root / f"{name.split('@')[0]}{suffix}.log") as worker:
        yield worker


@contextmanager
def _web(
    env: dict[str, str], root: Path, node: int, port: int, suffix: str = ""
) -> Iterator[RunningProcess]:
    argv = python_argv("-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                       "synthorg_site.asgi:application")  # fmt: skip
    with running(argv, env=env, log_path=root / f"web-{node}{suffix}.log") as web:
        yield web


@contextmanager
def _beat(env: dict[str, str], root: Path, suffix: str = "") -> Iterator[RunningProcess]:
    argv = python_argv("-m", "celery", "-A", "synthorg_site", "beat", "-l", "INFO",
                       "-s", str(root / "beat-schedule"))  # fmt: skip
    with running(argv, env=env, log_path=root / f"beat{suffix}.log") as beat:
        yield beat


@contextmanager
def cluster(
    test_env: dict[str, str],
    root: Path,
    config: dict[str, Any],
    *,
    redis_db: int | None,
    web_nodes: int = 2,
    workers: int = 3,
) -> Iterator[Cluster]:
    """Start ``web_nodes`` daphne, ``workers`` Celery workers and one beat with ``config``."""
    path = root / "synthorg.yaml"
    path.write_text(json.dumps(config))
    # A test that brings its own Redis (redis_db None) keeps its REDIS_URL as it is.
    redis_url = test_env["REDIS_URL"]
    if redis_db is not None:
        redis_url = own_redis(redis_url, redis_db)
    env = dict(test_env, SYNTHORG_CONFIG=str(path), REDIS_URL=redis_url)
    redis.Redis.from_url(env["REDIS_URL"]).flushdb()
    heartbeats = redis.Redis.from_url(env["REDIS_URL"])
    names = [f"cluster-worker-{n}-{os.getpid()}@localhost" for n in range(workers)]
    with ExitStack() as stack:
        started = Cluster(
            web=[], workers=[], worker_names=names, broker_url=env["REDIS_URL"], root=root,
            env=env, stack=stack, heartbeats=heartbeats,
        )  # fmt: skip
        for name in names:
            started.workers.append(stack.enter_context(_worker(env, root, name)))
            started.logs.append(started.workers[-1].log_path)
        started.beat = stack.enter_context(_beat(env, root))
        started.logs.append(started.beat.log_path)
        for node in range(web_nodes):
            port = free_port()
            web = stack.enter_context(_web(env, root, node, port))
            started.web_processes.append(web)
            started.logs.append(web.log_path)
            started.web.append(f"http://127.0.0.1:{port}")
        for name in names:
            started.wait_for_heartbeat(name)
        for url in started.web:
            _wait_for_web(url)
        yield started


def _wait_for_web(url: str) -> None:
    wait_until(
        lambda: http_status(url + "/healthz") in (200, 503), timeout=90, what=f"the web node {url}"
    )
