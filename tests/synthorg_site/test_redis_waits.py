"""Waits past 5 s on a TCP Redis: the channel layer and daphne's agent API.

The suite's own Redis listens on a unix socket; these tests start a second Redis on
a loopback TCP port, the other configuration the console supports.
"""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.exceptions
from channels_redis.core import RedisChannelLayer
from django.conf import settings

from common.platform.redis_options import channel_layer_host
from common.testing import (
    free_port,
    http_status,
    python_argv,
    require,
    run_fresh,
    running,
    wait_until,
)
from trust_app.services.agents import agent_create, person_create, person_token_issue

pytestmark = pytest.mark.integration

# Longer than one blocking read of the channel layer (5 s): the read must be retried,
# not timed out.
LONG_WAIT = 8.0


@pytest.fixture(scope="module")
def tcp_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = shutil.which("redis-server")
    require(binary is not None, "redis-server is not installed")
    assert binary is not None
    port = free_port()
    data = tmp_path_factory.mktemp("tcp-redis")
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", str(data), "--loglevel", "warning"]  # fmt: skip
    with running(argv, env={}, log_path=data / "redis.log") as server:
        url = f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(url, socket_timeout=1)
        wait_until(lambda: bool(client.ping()), timeout=30, what="the TCP Redis to answer")
        client.close()
        assert server.process.poll() is None
        yield url


def _receive_after(layer: RedisChannelLayer, *, send_after: float | None) -> dict[str, Any] | str:
    """What a receiver waiting ``LONG_WAIT`` s gets; a message is sent after ``send_after``."""

    async def scenario() -> dict[str, Any] | str:
        channel = await layer.new_channel()

        async def send_later() -> None:
            assert send_after is not None
            await asyncio.sleep(send_after)
            await layer.send(channel, {"type": "invocation.status", "status": "succeeded"})

        sender = asyncio.ensure_future(send_later()) if send_after is not None else None
        try:
            return dict(await asyncio.wait_for(layer.receive(channel), LONG_WAIT))
        except TimeoutError:
            return "waited"
        finally:
            if sender is not None:
                await sender
            await layer.flush()

    # a browser test earlier in the session keeps a loop running in this thread
    return run_fresh(scenario)


def test_the_channel_layer_waits_past_5s_on_tcp_redis(tcp_redis: str) -> None:
    layer = RedisChannelLayer(hosts=[channel_layer_host(tcp_redis, settings.REDIS_TIMEOUTS)])
    assert _receive_after(layer, send_after=None) == "waited"
    fresh = RedisChannelLayer(hosts=[channel_layer_host(tcp_redis, settings.REDIS_TIMEOUTS)])
    assert _receive_after(fresh, send_after=6.0) == {
        "type": "invocation.status",
        "status": "succeeded",
    }


def test_a_read_timeout_under_the_blocking_read_breaks_the_wait(tcp_redis: str) -> None:
    """The control: what the console's settings refuse is what broke waits."""
    short = {**channel_layer_host(tcp_redis, settings.REDIS_TIMEOUTS), "socket_timeout": 3}
    layer = RedisChannelLayer(hosts=[short])
    with pytest.raises(redis.exceptions.TimeoutError):
        _receive_after(layer, send_after=None)


@pytest.fixture
def daphne_on_tcp_redis(tcp_redis: str, test_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """daphne on the test database, its channel layer on the TCP Redis."""
    port = free_port()
    argv = python_argv("-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                       "synthorg_site.asgi:application")  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with running(
        argv, env={**test_env, "REDIS_URL": tcp_redis}, log_path=tmp_path / "d.log"
    ) as web:
        wait_until(
            lambda: http_status(url + "/healthz") in (200, 503) or web.process.poll() is not None,
            timeout=60,
            what="daphne to answer",
        )
        assert web.process.poll() is None, web.output()
        yield url


@pytest.mark.django_db(transaction=True)
def test_rest_waits_past_5s_on_tcp_redis(daphne_on_tcp_redis: str) -> None:
    """A supervised agent's write waits for a person: nobody decides for 8 s (answered
    pending, never a 500), then a person denies 6 s into a 30 s wait (answered denied)."""
    name = f"tcp-{uuid.uuid4().hex[:8]}"
    created_agent = agent_create(name=name, access_level="standard", autonomy="supervised")
    person = person_create(username=f"op-{name}", role="operator", password=None)
    person_token = person_token_issue(person=person)
    call = {"tool": "write_file", "arguments": {"path": "x.txt", "content": "x\n"}}
    with (
        httpx.Client(
            base_url=daphne_on_tcp_redis,
            headers={"Authorization": f"Bearer {created_agent.token}"},
            timeout=90,
        ) as http,
        httpx.Client(
            base_url=daphne_on_tcp_redis,
            headers={"Authorization": f"Bearer {person_token}"},
            timeout=90,
        ) as operator,
    ):
        created = http.post("/api/v1/invocations/", json={**call, "wait": int(LONG_WAIT)})
        assert created.status_code == 201, created.text
        assert created.json()["status"] == "pending_approval", created.text
        invocation = created.json()
        again = http.get(f"/api/v1/invocations/{invocation['id']}/", params={"wait": 7})
        assert again.status_code == 200, again.text
        assert again.json()["status"] == "pending_approval"

        decided: list[httpx.Response] = []

        def deny_later() -> None:
            time.sleep(6)
            decided.append(
                operator.post(
                    f"/api/v1/approvals/{invocation['approval']['id']}/decide/",
                    json={"decision": "deny", "reason": "not on a Friday"},
                )
            )

        person_thread = threading.Thread(target=deny_later)
        person_thread.start()
        answer = http.get(f"/api/v1/invocations/{invocation['id']}/", params={"wait": 30})
        person_thread.join(60)
    assert decided and decided[0].status_code == 200, decided and decided[0].text
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "denied", answer.text
    assert "not on a Friday" in str(answer.json()["error"])
