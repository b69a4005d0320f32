"""Thin Celery tasks: evaluate one agent after new evidence, or all on a schedule."""

from __future__ import annotations

import uuid

from celery import shared_task

from trust_app.models import Agent


@shared_task(name="trust_app.evaluate_agent", ignore_result=True)
def evaluate_agent(agent_id: str) -> None:
    """Evaluate one agent's trust (queued after a call settles)."""
    from trust_app.services_trust import trust_evaluate

    agent = Agent.objects.filter(pk=uuid.UUID(agent_id)).first()
    if agent is not None:
        trust_evaluate(agent=agent)


@shared_task(name="trust_app.evaluate_all", ignore_result=True)
def evaluate_all() -> int:
    """Evaluate every agent: re-verification and idle decay happen here."""
    from trust_app.services_trust import trust_evaluate_all

    return trust_evaluate_all()
