"""The permissions service: an agent's cap on calls at once checked, written and audited."""

from __future__ import annotations

from typing import Any

import pytest

from audit_app.models import AuditEvent
from audit_app.record import Actor
from common.errors import InvalidArgumentError
from trust_app.models import Agent
from trust_app.services.agents import agent_create
from trust_app.services.permissions import (
    agent_permissions_check,
    agent_permissions_state,
    agent_permissions_update,
)

pytestmark = pytest.mark.django_db

ADMIN = Actor.system("test admin")


@pytest.fixture
def agent() -> Agent:
    return agent_create(name="capped", access_level="standard").agent


def proposal(**changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "access_level": "standard",
        "autonomy": "semi",
        "allowed": (),
        "denied": (),
        "sub_constraints": {},
        "max_concurrent_calls": None,
    }
    fields.update(changes)
    return fields


def update(agent: Agent, **changes: Any) -> Any:
    return agent_permissions_update(agent=agent, actor=ADMIN, **proposal(**changes))


@pytest.mark.parametrize("cap", [None, 1, 4, 10_000])
def test_a_cap_of_none_or_1_to_10000_is_accepted(cap: int | None) -> None:
    assert agent_permissions_check(**proposal(max_concurrent_calls=cap)).max_concurrent_calls == cap


@pytest.mark.parametrize("cap", [0, -1, 10_001, "8", True, 2.5])
def test_a_cap_out_of_bounds_or_not_a_whole_number_is_refused_with_the_allowed_values(
    cap: object, settings: Any
) -> None:
    settings.SYNTHORG_AGENT_MAX_CONCURRENT_CALLS = 7
    with pytest.raises(InvalidArgumentError) as raised:
        agent_permissions_check(**proposal(max_concurrent_calls=cap))
    problems = raised.value.details["problems"]
    assert list(problems) == ["max_concurrent_calls"]
    message = problems["max_concurrent_calls"]
    assert f"{cap!r} is not allowed" in message
    assert "1 to 10000" in message and "console default (7)" in message


def test_every_problem_is_named_at_once(agent: Agent) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        agent_permissions_check(**proposal(access_level="godmode", max_concurrent_calls=0))
    assert set(raised.value.details["problems"]) == {"access_level", "max_concurrent_calls"}


def test_the_state_carries_the_agents_cap(agent: Agent) -> None:
    assert agent_permissions_state(agent).max_concurrent_calls is None
    Agent.objects.filter(pk=agent.pk).update(max_concurrent_calls=9)
    agent.refresh_from_db()
    assert agent_permissions_state(agent).max_concurrent_calls == 9
    assert agent_permissions_state(agent).as_dict()["max_concurrent_calls"] == 9


def test_changing_the_cap_writes_it_with_one_audit_row_holding_before_and_after(
    agent: Agent,
) -> None:
    events = AuditEvent.objects.filter(kind="agent.permissions_updated", agent_id=agent.id)
    effect = update(agent, max_concurrent_calls=12)
    assert effect.changed_fields == ["max_concurrent_calls"]
    assert effect.reachable == [] and effect.unreachable == []
    agent.refresh_from_db()
    assert agent.max_concurrent_calls == 12
    event = events.get()
    assert event.reason == "changed: max_concurrent_calls"
    assert event.data["before"]["max_concurrent_calls"] is None
    assert event.data["after"]["max_concurrent_calls"] == 12

    # The same again: nothing changes, nothing is recorded.
    assert not update(agent, max_concurrent_calls=12).changed
    assert events.count() == 1

    # None gives the agent back to the console default, audited too.
    update(agent, max_concurrent_calls=None)
    agent.refresh_from_db()
    assert agent.max_concurrent_calls is None
    last = events.order_by("-id").first()
    assert last is not None
    assert [last.data[side]["max_concurrent_calls"] for side in ("before", "after")] == [12, None]


def test_another_field_changed_keeps_the_cap_and_a_refused_cap_writes_nothing(
    agent: Agent,
) -> None:
    update(agent, max_concurrent_calls=3)
    update(agent, autonomy="supervised", max_concurrent_calls=3)
    agent.refresh_from_db()
    assert (agent.autonomy, agent.max_concurrent_calls) == ("supervised", 3)

    before = AuditEvent.objects.count()
    with pytest.raises(InvalidArgumentError):
        update(agent, autonomy="locked", max_concurrent_calls=10_001)
    agent.refresh_from_db()
    assert (agent.autonomy, agent.max_concurrent_calls) == ("supervised", 3)
    assert AuditEvent.objects.count() == before
