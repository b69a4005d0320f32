"""A web node whose database or Redis is away answers 503 unavailable with Retry-After,
in the JSON envelope, fast; a wait whose live updates are away keeps waiting.

The outages are real: each web node here is a daphne started with its database or its
Redis at an address where nothing answers. Controls: the same request to the session's
healthy node answers as usual.
"""

from __future__ import annotations

import concurrent.futures
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.testing import free_port, http_status, python_argv, running, wait_until
from tools_app.models import Invocation, InvocationStatus
from trust_app.services.agents import agent_create, person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _node(env: dict[str, str], log: Path) -> Iterator[str]:
    port = free_port()
    argv = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    with running(argv, env=env, log_path=log):
        url = f"http://127.0.0.1:{port}"
        wait_until(
            lambda: http_status(url + "/healthz", timeout=10) > 0, timeout=90, what="the web node"
        )
        yield url


@pytest.fixture
def no_database(test_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    dead = f"postgres://synthorg@127.0.0.1:{free_port()}/synthorg"
    yield from _node(dict(test_env, DATABASE_URL=dead), tmp_path / "web.log")


@pytest.fixture
def no_redis(test_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    dead = f"unix://{tmp_path}/nothing-here.sock?db=0"
    yield from _node(dict(test_env, REDIS_URL=dead), tmp_path / "web.log")


def _agent() -> tuple[Any, str]:
    created = agent_create(name=f"outage-{uuid.uuid4().hex[:8]}", access_level="standard")
    return created.agent, created.token


def _assert_unavailable(response: httpx.Response, part: str) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert int(response.headers["Retry-After"]) > 0
    body = response.json()
    assert body["error"]["code"] == "unavailable"
    assert body["error"]["details"] == {"part": part}
    assert part in body["error"]["message"]


def test_healthz_answers_within_its_deadline_naming_the_part_that_is_down(
    no_database: str,
) -> None:
    status = http_status(no_database + "/healthz", timeout=10)
    assert status == 503
    with httpx.Client(timeout=10) as http:
        body = http.get(no_database + "/healthz").json()
    assert "database" in body["failing"]
    assert body["parts"]["database"]["ok"] is False
    assert body["parts"]["redis"]["ok"] is True


def test_a_node_without_its_database_answers_503_with_retry_after(
    no_database: str, daphne_server: str
) -> None:
    _, token = _agent()
    headers = {"Authorization": f"Bearer {token}"}
    call = {"tool": "read_file", "arguments": {"path": "x"}}
    with httpx.Client(headers=headers, timeout=30) as http:
        _assert_unavailable(http.post(no_database + "/api/v1/invocations/", json=call), "database")
        _assert_unavailable(http.get(no_database + "/api/v1/me/"), "database")
        # Control: the healthy node answers the same requests.
        assert http.get(daphne_server + "/api/v1/me/").status_code == 200


def test_a_persons_token_met_by_an_outage_answers_503_not_500(
    no_database: str, daphne_server: str
) -> None:
    # A person's token is looked up before any view runs (its own middleware).
    person = person_create(username=f"op-{uuid.uuid4().hex[:8]}", role="operator", password=None)
    headers = {"Authorization": f"Bearer {person_token_issue(person=person)}"}
    with httpx.Client(headers=headers, timeout=30) as http:
        _assert_unavailable(http.get(no_database + "/api/v1/approvals/"), "database")
        page = http.get(no_database + "/approvals/")
        assert page.status_code == 503 and int(page.headers["Retry-After"]) > 0
        # Control: the healthy node signs the same person in.
        assert http.get(daphne_server + "/api/v1/approvals/").status_code == 200


def test_a_node_without_redis_answers_503_and_a_healthy_one_serves(
    no_redis: str, daphne_server: str
) -> None:
    _, token = _agent()
    headers = {"Authorization": f"Bearer {token}"}
    call = {"tool": "read_file", "arguments": {"path": "x"}}
    with httpx.Client(headers=headers, timeout=30) as http:
        _assert_unavailable(http.post(no_redis + "/api/v1/invocations/", json=call), "redis")
        created = http.post(daphne_server + "/api/v1/invocations/", json=call)
        assert created.status_code == 201, created.text


def test_a_wait_without_live_updates_keeps_waiting_and_sees_the_end(
    no_redis: str,
) -> None:
    """The node cannot hear status messages (Redis is away), so its wait reads the
    database: a call that ends during the wait is answered ended, not as it was."""
    agent, token = _agent()
    invocation = Invocation.objects.create(
        agent=agent,
        tool="read_file",
        category="file_system",
        action_type="file:read",
        safety_class="read",
        arguments={"path": "x"},
        arguments_hash="0" * 64,
        status=InvocationStatus.RUNNING,
        decision={"outcome": "allow", "reason": "test", "rule": "test", "trace": []},
    )
    url = f"{no_redis}/api/v1/invocations/{invocation.id}/"
    headers = {"Authorization": f"Bearer {token}"}
    with (
        httpx.Client(headers=headers, timeout=60) as http,
        concurrent.futures.ThreadPoolExecutor(1) as pool,
    ):
        waiting = pool.submit(http.get, url, params={"wait": 30})
        time.sleep(1.5)
        assert not waiting.done(), waiting.result().text
        Invocation.objects.filter(id=invocation.id).update(status=InvocationStatus.SUCCEEDED)
        answer = waiting.result(timeout=40)
    if answer.status_code == 503:
        pytest.fail(f"the node refused the wait instead of waiting: {answer.text}")
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "succeeded"
