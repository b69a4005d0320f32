"""Racing decisions on one promotion request: exactly one wins (threads, PostgreSQL)."""
# ruff: noqa: F811  (pytest fixtures imported from the support module)

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from common.errors import ConflictError
from tests.trust_app.test_trust_support import (  # noqa: F401
    TERMINAL_GATED,
    make_agent,
    make_person,
    trust_config,
)
from trust_app.models import PromotionRequest, PromotionStatus, TrustChange, TrustState
from trust_app.services.evidence import task_outcome_report
from trust_app.services.promotion import promotion_decide

DECIDERS = 6


@pytest.mark.django_db(transaction=True)
def test_racing_decisions_on_one_request_exactly_one_wins(
    trust_config: Callable[[str], None],
    make_agent: Callable[..., Any],
    make_person: Callable[..., Any],
) -> None:
    assert connection.vendor == "postgresql"
    trust_config(TERMINAL_GATED)
    agent = make_agent("standard")
    people = [make_person("operator" if i % 2 else "admin") for i in range(DECIDERS)]
    task_outcome_report(
        agent=agent,
        person=people[0],
        task_id="t1",
        difficulty="hard",
        quality=9.0,
        completed=True,
        categories=["terminal"],
    )
    request = PromotionRequest.objects.get(agent=agent)
    barrier = threading.Barrier(DECIDERS)
    won: list[str] = []
    lost: list[str] = []

    def decide(person: Any, index: int) -> None:
        try:
            barrier.wait()
            decision = "approve" if index % 2 == 0 else "deny"
            promotion_decide(request=request, person=person, decision=decision, reason=f"r{index}")
            won.append(decision)
        except ConflictError:
            lost.append(person.get_username())
        finally:
            connection.close()

    threads = [threading.Thread(target=decide, args=(p, i)) for i, p in enumerate(people)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1
    assert len(lost) == DECIDERS - 1
    request.refresh_from_db()
    expected = PromotionStatus.APPROVED if won[0] == "approve" else PromotionStatus.DENIED
    assert request.status == expected
    promoted = TrustChange.objects.filter(agent=agent, kind="promotion").count()
    assert promoted == (1 if won[0] == "approve" else 0)
    level = TrustState.objects.get(agent=agent).levels["terminal"]
    assert level == ("standard" if won[0] == "approve" else "restricted")
