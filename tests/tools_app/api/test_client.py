"""The Python client against the real console: calls, waits, errors and the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from common.testing import BASE_DIR, RunningProcess
from synthorg_client import (
    Call,
    Client,
    Conflict,
    InvalidArgument,
    NotFound,
    Unauthenticated,
    Unavailable,
)
from tests.support.lossy_proxy import lossy_proxy
from tests.tools_app.api.conftest import AgentClient
from tools_app.models import Invocation

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _worker(celery_worker_process: RunningProcess) -> RunningProcess:
    return celery_worker_process


def test_client_calls_and_waits(daphne_server: str, make_agent: Callable[..., AgentClient]) -> None:
    agent = make_agent(denied=["test_counter"])
    with Client(daphne_server, agent.token) as client:
        assert client.me()["name"] == agent.agent.name
        names = {t["name"] for t in client.tools()}
        assert "test_echo" in names and "test_counter" not in names
        assert client.tool("test_echo")["name"] == "test_echo"
        done = client.call("test_echo", {"text": "via client"}, wait=30, idempotency_key="c-1")
        assert done.succeeded and done.result is not None
        assert done.result.content == "via client\n"
        assert client.call("test_echo", {"text": "via client"}, idempotency_key="c-1").id == done.id
        with pytest.raises(Conflict):
            client.call("test_echo", {"text": "other"}, idempotency_key="c-1")
        with pytest.raises(InvalidArgument):
            client.call("test_echo", {"text": 1})
        with pytest.raises(NotFound):
            client.tool("test_counter")
        denied = client.call("test_counter", {"seconds": 0})
        assert denied.status == "denied" and denied.decision is not None
        results = client.batch(
            [Call("test_echo", {"text": "a"}), Call("test_echo", {"text": "b"})],
            max_concurrency=1,
            wait=30,
        )
        assert [r.result.content if r.result else None for r in results] == ["a\n", "b\n"]
    stranger = Client(daphne_server, "soa_notatoken_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
    with stranger, pytest.raises(Unauthenticated):
        stranger.me()


def test_command_line_call(daphne_server: str, make_agent: Callable[..., AgentClient]) -> None:
    agent = make_agent()
    env = dict(os.environ, SYNTHORG_URL=daphne_server, SYNTHORG_TOKEN=agent.token)
    done = subprocess.run(
        [sys.executable, "-m", "synthorg_client", "call", "test_echo", '{"text": "cli"}'],
        env=env, cwd=BASE_DIR, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["content"] == "cli\n"
    refused = subprocess.run(
        [sys.executable, "-m", "synthorg_client", "call", "test_echo", '{"text": 3}'],
        env=env, cwd=BASE_DIR, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "invalid_argument" in refused.stderr


def test_a_lost_answer_is_retried_and_the_call_runs_once(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    """The console acts, the answer is lost on the way back; the client sends the call
    again with the same idempotency key and gets the same invocation: one run."""
    from trust_app.services.agents import workspace_grant

    agent = make_agent()
    workspace = Path(agent.agent.workspace)
    workspace_grant(workspace)
    port = int(daphne_server.rsplit(":", 1)[1])
    with lossy_proxy(port) as proxy, Client(proxy.url, agent.token) as client:
        proxy.lose = 1
        done = client.call("test_counter", {"seconds": 0}, wait=30)
        assert proxy.lost == 1
    assert done.status == "succeeded", done
    assert (workspace / "counter.txt").read_text() == "run\n"
    assert Invocation.objects.filter(agent=agent.agent).count() == 1


def test_without_retries_the_lost_answer_is_unavailable_though_the_call_ran(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    """The control: the lost answer really came after the console acted."""
    from trust_app.services.agents import workspace_grant

    agent = make_agent()
    workspace = Path(agent.agent.workspace)
    workspace_grant(workspace)
    port = int(daphne_server.rsplit(":", 1)[1])
    with lossy_proxy(port) as proxy, Client(proxy.url, agent.token, retries=0) as client:
        proxy.lose = 1
        with pytest.raises(Unavailable):
            client.call("test_counter", {"seconds": 0}, wait=30)
    assert Invocation.objects.filter(agent=agent.agent).count() == 1
