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
def cluster(
    test_env: dict[str, str],
    root: Path,
    config: dict[str, Any],
    *,
    redis_db: int,
    web_nodes: int = 2,
    workers: int = 3,
) -> Iterator[Cluster]:
    """Start ``web_nodes`` daphne, ``workers`` Celery workers and one beat with ``config``."""
    path = root / "synthorg.yaml"
    path.write_text(json.dumps(config))
    env = dict(
        test_env, SYNTHORG_CONFIG=str(path), REDIS_URL=own_redis(test_env["REDIS_URL"], redis_db)
    )
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
        beat = python_argv("-m", "celery", "-A", "synthorg_site", "beat", "-l", "INFO",
                           "-s", str(root / "beat-schedule"))  # fmt: skip
        stack.enter_context(running(beat, env=env, log_path=root / "beat.log"))
        started.logs.append(root / "beat.log")
        for node in range(web_nodes):
            port = free_port()
            argv = python_argv("-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                               "synthorg_site.asgi:application")  # fmt: skip
            log = root / f"web-{node}.log"
            stack.enter_context(running(argv, env=env, log_path=log))
            started.logs.append(log)
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
