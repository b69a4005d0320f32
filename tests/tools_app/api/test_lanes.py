"""Long and short calls do not share one lane: while every slot of the workers that serve
long calls holds a `sleep`, a file call is answered by the quick lane's own worker.

The module starts its own daphne, a worker for every queue but the quick lanes with two
slots (SYNTHORG_WORKER_CALLS=2), and a worker for the quick lanes only, as the launcher
does. Control: a long call beyond the two slots waits until one frees.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from common.testing import free_port, http_status, python_argv, running, wait_until
from common.vocabulary.lanes import QUEUES, QUICK_QUEUES, call_queue
from tests.support.pipeline import own_redis
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tools_app.models import Invocation
from trust_app.models import AgentPermissions
from trust_app.services.agents import workspace_grant

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
REDIS_DB = 11
SLOTS = 2


def test_file_and_memory_calls_take_the_quick_lane_of_their_backend() -> None:
    assert call_queue(backend="subprocess", category="file_system") == "sandbox.subprocess.quick"
    assert call_queue(backend="namespace", category="memory") == "sandbox.namespace.quick"
    # Control: a command is a long call.
    assert call_queue(backend="namespace", category="terminal") == "sandbox.namespace"


@pytest.fixture(scope="module")
def daphne_server(
    test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    root = tmp_path_factory.mktemp("lanes")
    env = dict(test_env, REDIS_URL=own_redis(test_env["REDIS_URL"], REDIS_DB))
    redis.Redis.from_url(env["REDIS_URL"]).flushdb()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    long_queues = [q for q in QUEUES if q not in QUICK_QUEUES]

    def worker(name: str, queues: list[str] | tuple[str, ...]) -> list[str]:
        return python_argv(
            "-m", "celery", "-A", "synthorg_site", "worker", "-Q", ",".join(queues),
            "-n", f"{name}-{os.getpid()}@localhost", "--without-gossip", "--without-mingle",
        )  # fmt: skip

    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    with (
        running(worker("long", long_queues), env=dict(env, SYNTHORG_WORKER_CALLS=str(SLOTS)),
                log_path=root / "long.log"),
        running(worker("quick", QUICK_QUEUES), env=env, log_path=root / "quick.log"),
        running(daphne, env=env, log_path=root / "daphne.log"),
    ):  # fmt: skip
        wait_until(lambda: http_status(url + "/healthz") == 200, timeout=120, what="the console")
        yield url


def _long_agent(make: Callable[..., AgentClient]) -> AgentClient:
    client = make("elevated", autonomy="full")
    AgentPermissions.objects.create(agent=client.agent, sub_constraints={"terminal": "full"})
    workspace_grant(Path(client.agent.workspace))
    return client


def _running(ids: list[str]) -> int:
    return Invocation.objects.filter(id__in=ids, status="running").count()


def test_a_file_call_is_answered_while_long_calls_hold_every_long_slot(
    make_agent: Callable[..., AgentClient],
) -> None:
    sleepers = [_long_agent(make_agent) for _ in range(SLOTS)]
    long_ids = [s.call("shell_command", {"argv": ["sleep", "45"]}).json()["id"] for s in sleepers]
    wait_until(lambda: _running(long_ids) == SLOTS, timeout=60, what="the sleeps to run")
    reader = _long_agent(make_agent)
    (Path(reader.agent.workspace) / "notes.txt").write_text("on the quick lane\n")
    # Control: a long call beyond the slots waits (another agent's, so no cap holds it).
    beyond = reader.call("shell_command", {"argv": ["true"]}).json()
    assert beyond["status"] == "queued", beyond
    answered = reader.call("read_file", {"path": "notes.txt"}, wait=60).json()
    assert answered["status"] == "succeeded", answered
    assert "on the quick lane" in answered["result"]["content"]
    assert _running(long_ids) == SLOTS, "the sleeps were still running"
    assert reader.get(beyond["id"]).json()["status"] == "queued"
    # A slot frees: the waiting long call runs.
    for sleeper, invocation_id in zip(sleepers, long_ids, strict=True):
        assert sleeper.http.post(f"/api/v1/invocations/{invocation_id}/cancel/").status_code == 200
    done = reader.get(beyond["id"], wait=60).json()
    assert done["status"] == "succeeded", done
