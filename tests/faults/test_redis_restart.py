"""Redis restarts under a console's feet: its own append-only Redis on TCP, a web node, a
worker and beat. Calls in flight end once, the worker lives on and serves new calls, and
a client asking during the outage reads 503 with Retry-After in the JSON envelope.

The worker part reproduces kombu 5.7 / celery 5.7 killing a worker that holds
unacknowledged messages when Redis goes away (synthorg_site/broker_repair.py).
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from audit_app.models import AuditEvent
from common.testing import free_port, http_status, python_argv, running, wait_until
from tests.support.faults import OwnRedis
from tools_app.models import Invocation
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

QUEUES = "default,sandbox.subprocess,sandbox.namespace,sandbox.docker,maintenance"


@contextmanager
def console_on(test_env: dict[str, str], root: Path) -> Iterator[tuple[str, OwnRedis, int]]:
    own = OwnRedis(root)
    own.start()
    env = dict(test_env, REDIS_URL=own.url)
    port = free_port()
    name = f"fault-worker-{uuid.uuid4().hex[:6]}@localhost"
    with ExitStack() as stack:
        stack.callback(own.stop)
        worker = stack.enter_context(
            running(
                python_argv("-m", "celery", "-A", "synthorg_site", "worker", "-Q", QUEUES,
                            "-n", name, "--without-gossip", "--without-mingle", "-l", "INFO"),
                env=env, log_path=root / "worker.log",
            )
        )  # fmt: skip
        stack.enter_context(
            running(
                python_argv("-m", "celery", "-A", "synthorg_site", "beat", "-l", "INFO",
                            "-s", str(root / "beat-schedule")),
                env=env, log_path=root / "beat.log",
            )
        )  # fmt: skip
        stack.enter_context(
            running(
                python_argv("-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                            "synthorg_site.asgi:application"),
                env=env, log_path=root / "web.log",
            )
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        wait_until(
            lambda: http_status(base + "/healthz", timeout=10) == 200, timeout=120, what="healthy"
        )
        yield base, own, worker.process.pid


def _runs(workspace: Path) -> int:
    counter = workspace / "counter.txt"
    return counter.read_text().count("run") if counter.exists() else 0


def test_a_redis_restart_loses_nothing_and_the_worker_lives_on(
    test_env: dict[str, str], tmp_path: Path
) -> None:
    created = agent_create(
        name=f"fault-{uuid.uuid4().hex[:8]}", access_level="elevated", autonomy="full"
    )
    workspace = Path(created.agent.workspace)
    headers = {"Authorization": f"Bearer {created.token}"}
    with (
        console_on(test_env, tmp_path) as (base, own, worker_pid),
        httpx.Client(base_url=base, headers=headers, timeout=60) as http,
    ):
        call = {"tool": "test_counter", "arguments": {"seconds": 6}}
        ids = [http.post("/api/v1/invocations/", json=call).json()["id"] for _ in range(3)]
        running_now = Invocation.objects.filter(id__in=ids, status="running")
        wait_until(lambda: running_now.count() == 3, timeout=60, what="the calls to run")
        own.stop()
        try:
            during = http.post("/api/v1/invocations/", json=call)
            assert during.status_code == 503, during.text
            assert during.headers["content-type"].startswith("application/json")
            assert int(during.headers["Retry-After"]) > 0
            assert during.json()["error"]["code"] == "unavailable"
            time.sleep(3)
        finally:
            own.start()
        rows = Invocation.objects.filter(id__in=ids)
        wait_until(
            lambda: set(rows.values_list("status", flat=True)) == {"succeeded"},
            timeout=120,
            what="every call in flight to end succeeded",
        )
        # The worker that held them lives on (it was not restarted) and serves new calls.
        subprocess.run(["kill", "-0", str(worker_pid)], check=True)
        after = http.post("/api/v1/invocations/", json={**call, "wait": 60}).json()
        assert after["status"] == "succeeded", after
    assert _runs(workspace) == 4  # the three in flight once each, and the new one
    for invocation_id in [*ids, after["id"]]:
        endings = AuditEvent.objects.filter(invocation_id=invocation_id, kind="invocation.finished")
        assert list(endings.values_list("status", flat=True)) == ["succeeded"]
    log = (tmp_path / "worker.log").read_text()
    assert "Unrecoverable error" not in log
