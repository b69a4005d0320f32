"""http_request through the public API and a real worker: deadlines and redirects.

The test's own loopback server feeds a body one byte a second; a call with a 2 s
timeout ends ``timed_out`` while the server still had bytes to send (it sees the
hang-up). A malformed ``Location`` is a refusal that says so, not a crash.
Positive controls: the same server answering fast, and a well-formed redirect.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from common.testing import wait_until
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from tests.tools_app.net.test_fetch_deadline import TRICKLE_BYTES, Trickle
from trust_app.models import AgentPermissions

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent


@pytest.fixture
def web() -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer("127.0.0.1") as server:
        yield server


@pytest.fixture
def fetcher(make_agent: Callable[..., AgentClient], celery_worker_process: Any) -> AgentClient:
    client = make_agent("standard", autonomy="full")
    AgentPermissions.objects.create(
        agent=client.agent, sub_constraints={"allowed_hosts": ["127.0.0.1"]}
    )
    return client


def fetched(client: AgentClient, url: str, **arguments: Any) -> Any:
    response = client.call(
        "http_request", {"url": url, **arguments}, idempotency_key=uuid.uuid4().hex, wait=20
    )
    assert response.status_code == 201, response.text
    answer = response.json()
    for _ in range(3):  # bounded: the call's own limit is far below this
        if answer["status"] not in ("queued", "running"):
            break
        answer = client.get(answer["id"], wait=20).json()
    return answer


def test_a_trickled_body_ends_timed_out_at_the_requested_timeout(
    fetcher: AgentClient, web: LoopbackHttpServer
) -> None:
    trickle = Trickle()
    web.route("/slow", Reply(200, {"Content-Type": "text/plain"}, trickle))
    answer = fetched(fetcher, web.url("/slow"), timeout_seconds=2)
    assert answer["status"] == "timed_out", answer
    assert "within the 2 s time limit" in answer["error"]["message"], answer
    wait_until(web.stream_stopped_early.is_set, timeout=15, what="the server to see the hang-up")
    assert trickle.sent < TRICKLE_BYTES

    # Positive control: the same body sent at once arrives within the same timeout.
    web.route("/fast", Reply(200, {"Content-Type": "text/plain"}, b"x" * TRICKLE_BYTES))
    fast = fetched(fetcher, web.url("/fast"), timeout_seconds=2)
    assert fast["status"] == "succeeded", fast
    assert fast["result"]["structured"]["body"] == "x" * TRICKLE_BYTES


def test_a_malformed_redirect_is_refused_with_a_reason(
    fetcher: AgentClient, web: LoopbackHttpServer
) -> None:
    web.route("/bad", Reply(302, {"Location": "http://[::1"}))
    answer = fetched(fetcher, web.url("/bad"))
    assert answer["status"] == "failed", answer
    assert answer["error"]["code"] == "INVALID_ARGUMENT", answer
    assert "malformed Location" in answer["error"]["message"], answer
    assert "unexpectedly" not in answer["error"]["message"]

    # Positive control: a well-formed redirect from the same server is followed.
    web.route("/good", Reply(302, {"Location": "/target"}))
    web.route("/target", Reply(200, body=b"arrived"))
    good = fetched(fetcher, web.url("/good"))
    assert good["status"] == "succeeded", good
    assert good["result"]["structured"]["body"] == "arrived"
