"""One queued evaluation per agent at a time: a burst of evidence is evaluated once."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from common.platform.redis import redis_client
from trust_app import tasks


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    sent: list[str] = []

    def apply_async(*, args: list[str], queue: str, **_: Any) -> None:
        assert queue == "maintenance"
        sent.append(args[0])

    monkeypatch.setattr(tasks.evaluate_agent, "apply_async", apply_async)
    return sent


def test_a_burst_queues_one_evaluation_and_a_started_one_lets_the_next_through(
    queued: list[str],
) -> None:
    agent_id = str(uuid.uuid4())
    for _ in range(5):
        tasks.evaluation_request(agent_id)
    assert queued == [agent_id]
    # The evaluation starts (it clears the mark before reading any evidence) ...
    redis_client().delete(tasks.PENDING_PREFIX + agent_id)
    # ... so evidence committed after that start queues the next one.
    tasks.evaluation_request(agent_id)
    assert queued == [agent_id, agent_id]


def test_the_mark_expires_so_a_lost_evaluation_never_stops_the_next(queued: list[str]) -> None:
    agent_id = str(uuid.uuid4())
    tasks.evaluation_request(agent_id)
    ttl = redis_client().ttl(tasks.PENDING_PREFIX + agent_id)
    assert 0 < ttl <= tasks.PENDING_SECONDS


@pytest.mark.django_db
def test_the_evaluation_clears_the_mark_before_it_reads(queued: list[str]) -> None:
    agent_id = str(uuid.uuid4())
    tasks.evaluation_request(agent_id)
    tasks.evaluate_agent.run(agent_id)  # no such agent: nothing to evaluate, mark cleared
    assert redis_client().get(tasks.PENDING_PREFIX + agent_id) is None
