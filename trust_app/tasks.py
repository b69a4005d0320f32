"""Thin Celery tasks: evaluate one agent after new evidence, or all on a schedule."""

from __future__ import annotations

import uuid

from celery import shared_task

from common.platform.redis import redis_client
from trust_app.models import Agent

# While an agent's evaluation is queued and not yet started, new evidence needs
# no second one: the queued evaluation reads it. The mark expires on its own,
# so a lost task delays an evaluation (the hourly one catches up) but never
# stops them.
PENDING_PREFIX = "synthorg:trust-evaluation-pending:"
PENDING_SECONDS = 60


def evaluation_request(agent_id: str) -> None:
    """Queue an evaluation of the agent unless one is queued and not yet started."""
    if redis_client().set(PENDING_PREFIX + agent_id, "1", nx=True, ex=PENDING_SECONDS):
        evaluate_agent.apply_async(args=[agent_id], queue="maintenance")


@shared_task(name="trust_app.evaluate_agent", ignore_result=True)
def evaluate_agent(agent_id: str) -> None:
    """Evaluate one agent's trust (queued after a call settles)."""
    from trust_app.services.trust import trust_evaluate

    # Cleared before reading: evidence committed from here on queues another.
    redis_client().delete(PENDING_PREFIX + agent_id)
    agent = Agent.objects.filter(pk=uuid.UUID(agent_id)).first()
    if agent is not None:
        trust_evaluate(agent=agent)


@shared_task(name="trust_app.evaluate_all", ignore_result=True)
def evaluate_all() -> int:
    """Evaluate every agent: re-verification and idle decay happen here."""
    from trust_app.services.trust import trust_evaluate_all

    return trust_evaluate_all()
