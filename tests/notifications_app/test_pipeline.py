"""Through the public API, with a real daphne and a real Celery worker: the loopback
webhook hears of a request as an agent makes it, and of the person's decision."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from common.testing import wait_until
from notifications_app.signing import SIGNATURE_HEADER, verify
from tests.notifications_app.conftest import SIGNING_KEY, SIGNING_KEY_ENV
from tests.notifications_app.receiver import Receiver, receiver
from tests.support.pipeline import Pipeline, configured_pipeline
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from trust_app.services.agents import person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
REDIS_DB = 11


@pytest.fixture(scope="module")
def hook() -> Iterator[Receiver]:
    with receiver("200") as started:
        yield started


@pytest.fixture(scope="module")
def pipeline(
    test_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory, hook: Receiver
) -> Iterator[Pipeline]:
    config = {
        "notifications": {
            "console_url": "https://console.example",
            "channels": [
                {"name": "ops", "type": "webhook", "url": hook.url, "secret_env": SIGNING_KEY_ENV,
                 "events": ["new", "decided"]},
            ],
        }
    }  # fmt: skip
    env = dict(test_env, **{SIGNING_KEY_ENV: SIGNING_KEY})
    root = tmp_path_factory.mktemp("notify-pipeline")
    with configured_pipeline(env, root, config, redis_db=REDIS_DB) as started:
        yield started


@pytest.fixture(scope="module")
def daphne_server(pipeline: Pipeline) -> str:
    return pipeline.url


def _heard(hook: Receiver, event: str, request_id: str) -> list[dict[str, Any]]:
    found = []
    for got in list(hook.received):
        body = json.loads(got.body)
        if body["event"] == event and body["request_id"] == request_id:
            assert verify(
                SIGNING_KEY, got.body, got.headers[SIGNATURE_HEADER], now=int(time.time())
            )
            found.append(body)
    return found


def test_an_agents_request_and_its_decision_reach_the_webhook(
    make_agent: Callable[..., AgentClient], hook: Receiver, pipeline: Pipeline
) -> None:
    agent = make_agent("standard", autonomy="locked")
    answer = agent.call("test_echo", {"text": "hello"}, wait=0)
    assert answer.status_code in (200, 201), answer.text
    request_id = answer.json()["approval"]["id"]
    wait_until(lambda: bool(_heard(hook, "new", request_id)), timeout=60, what="the 'new' webhook")
    [new] = _heard(hook, "new", request_id)
    assert new["agent"] == agent.agent.name and new["status"] == "pending"
    assert new["link"] == f"https://console.example/approvals/{request_id}/call/"

    person = person_create(username=f"op-{uuid.uuid4().hex[:8]}", role="operator", password=None)
    token = person_token_issue(person=person)
    decided = httpx.post(
        f"{pipeline.url}/api/v1/approvals/{request_id}/decide/",
        json={"decision": "deny", "reason": "not this one"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert decided.status_code == 200, decided.text
    wait_until(
        lambda: bool(_heard(hook, "decided", request_id)), timeout=60, what="the 'decided' webhook"
    )
    [settled] = _heard(hook, "decided", request_id)
    assert settled["status"] == "denied" and settled["decided_by"] == person.username
    assert settled["decision_reason"] == "not this one"
    pipeline.settle()
    # Each event was sent once, though the worker and the web node both saw it.
    assert len(_heard(hook, "new", request_id)) == 1
