"""Desktop sessions on a console with workers on two machines.

Two workers play two machines (``SYNTHORG_MACHINE`` m1 and m2, each with its own
directory of sessions, so neither reaches the other's control sockets), both serving
the desktop's queue; one daphne. A session stands on the machine whose worker took
the launch, and every later call of that agent's desktop is sent to that machine's
queue. The control: calls of another tool are shared by both machines, so without the
routing a desktop call would often land where no session stands.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from common.testing import free_port, http_status, python_argv, running, wait_until
from tests.support.pipeline import call_ended, own_redis
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tools_app.builtin.desktop.placement import PLACEMENT_PREFIX
from tools_app.models import Invocation

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
REDIS_DB = 9
MACHINES = ("m1", "m2")
IDLE_SECONDS = 10


@pytest.fixture(scope="module")
def broker(test_env: dict[str, str]) -> redis.Redis:
    return redis.Redis.from_url(own_redis(test_env["REDIS_URL"], REDIS_DB))


@pytest.fixture(scope="module")
def daphne_server(
    test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory, broker: redis.Redis
) -> Iterator[str]:
    from synthorg_site.celery import QUEUES

    root = tmp_path_factory.mktemp("desktop-machines")
    # Outside /tmp: the sessions' control directories are bound into their sandboxes.
    sessions = Path(f"/run/synthorg-test-desktop-{uuid.uuid4().hex[:8]}")
    base_env = dict(test_env, REDIS_URL=own_redis(test_env["REDIS_URL"], REDIS_DB))
    broker.flushdb()
    envs: dict[str, dict[str, str]] = {}
    for machine in MACHINES:
        config = root / f"{machine}.yaml"
        config.write_text(
            json.dumps(
                {
                    "desktop": {
                        "width": 640,
                        "height": 480,
                        "idle_seconds": IDLE_SECONDS,
                        "check_seconds": 0.5,
                        "runtime_dir": str(sessions / machine),
                    }
                }
            )
        )
        envs[machine] = dict(base_env, SYNTHORG_CONFIG=str(config), SYNTHORG_MACHINE=machine)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    names = {m: f"{m}-worker-{os.getpid()}@localhost" for m in MACHINES}

    def worker(machine: str) -> list[str]:
        return python_argv(
            "-m", "celery", "-A", "synthorg_site", "worker", "-Q", ",".join(QUEUES),
            "-n", names[machine], "--without-gossip", "--without-mingle", "-l", "INFO",
        )  # fmt: skip

    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    try:
        with (
            running(worker("m1"), env=envs["m1"], log_path=root / "m1.log"),
            running(worker("m2"), env=envs["m2"], log_path=root / "m2.log"),
            running(daphne, env=envs["m1"], log_path=root / "daphne.log"),
        ):
            for name in names.values():
                wait_until(
                    functools.partial(_beats, broker, name),
                    timeout=90,
                    what=f"the heartbeat of {name}",
                )
            wait_until(
                lambda: http_status(url + "/healthz") in (200, 503), timeout=60, what="daphne"
            )
            yield url
            wait_until(lambda: _idle(broker), timeout=60, what="both workers to go idle")
    finally:
        shutil.rmtree(sessions, ignore_errors=True)


def _beats(broker: redis.Redis, worker: str) -> bool:
    return bool(broker.exists(f"synthorg:heartbeat:worker:{worker}"))


def _idle(broker: redis.Redis) -> bool:
    from synthorg_site.celery import QUEUES

    queues = [*QUEUES, *(f"machine.{m}" for m in MACHINES)]
    return sum(int(broker.llen(q)) for q in queues) == 0 and not broker.hlen("unacked")


def _machine_of(answer: dict[str, Any]) -> str:
    worker = Invocation.objects.values_list("worker", flat=True).get(id=answer["id"])
    return str(worker).split("-", 1)[0]


def test_calls_follow_the_session_to_the_machine_holding_it(
    make_agent: Callable[..., AgentClient], broker: redis.Redis
) -> None:
    client = make_agent("standard", autonomy="full")
    launched = call_ended(client, "desktop_launch", {"argv": ["xmessage", "machines"]})
    assert launched["status"] == "succeeded", launched
    holder = _machine_of(launched)
    assert holder in MACHINES
    placed = broker.get(f"{PLACEMENT_PREFIX}{client.agent.id}")
    assert placed == holder.encode()
    for _ in range(8):
        shot = call_ended(client, "desktop_screenshot", {})
        assert shot["status"] == "succeeded", shot
        assert _machine_of(shot) == holder
    # Control: calls of another tool are taken by both machines' workers.
    (Path(client.agent.workspace) / "notes.txt").write_text("notes\n")
    ran_on = {
        _machine_of(call_ended(client, "read_file", {"path": "notes.txt"})) for _ in range(20)
    }
    assert ran_on == set(MACHINES), ran_on


def test_a_session_that_ended_leaves_its_machine_free(
    make_agent: Callable[..., AgentClient], broker: redis.Redis
) -> None:
    client = make_agent("standard", autonomy="full")
    launched = call_ended(client, "desktop_launch", {"argv": ["xmessage", "ends"]})
    assert launched["status"] == "succeeded", launched
    key = f"{PLACEMENT_PREFIX}{client.agent.id}"
    assert broker.get(key) == _machine_of(launched).encode()
    # Idle past its limit, the session ends and its holder says so at once.
    wait_until(lambda: not broker.exists(key), timeout=IDLE_SECONDS + 60, what="the key to go")
    ended = call_ended(client, "desktop_screenshot", {})
    assert ended["status"] == "failed", ended
    assert ended["error"]["code"] == "desktop_app_not_running", ended
    # Control: a new launch stands again, on whichever machine took it.
    again = call_ended(client, "desktop_launch", {"argv": ["xmessage", "again"]})
    assert again["status"] == "succeeded", again
    assert broker.get(key) == _machine_of(again).encode()
