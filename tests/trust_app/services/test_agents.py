"""agent_create: an agent created with its own cap on calls at once, or the console default."""

from __future__ import annotations

import pytest

from audit_app.models import AuditEvent
from common.errors import InvalidArgumentError
from trust_app.models import Agent
from trust_app.services.agents import agent_create

pytestmark = pytest.mark.django_db


def test_an_agent_is_created_with_the_console_default_unless_given_a_cap() -> None:
    plain = agent_create(name="plain", access_level="standard").agent
    capped = agent_create(name="capped", access_level="standard", max_concurrent_calls=10_000)
    assert Agent.objects.get(pk=plain.pk).max_concurrent_calls is None
    assert Agent.objects.get(pk=capped.agent.pk).max_concurrent_calls == 10_000
    created = AuditEvent.objects.get(kind="agent.created", agent_id=capped.agent.id)
    assert created.data["max_concurrent_calls"] == 10_000


@pytest.mark.parametrize("cap", [0, 10_001, "8", True])
def test_a_bad_cap_is_refused_naming_the_field_and_nothing_is_created(cap: object) -> None:
    before = AuditEvent.objects.count()
    with pytest.raises(InvalidArgumentError) as raised:
        agent_create(name="refused", access_level="standard", max_concurrent_calls=cap)  # type: ignore[arg-type]
    problems = raised.value.details["problems"]
    assert list(problems) == ["max_concurrent_calls"]
    assert "1 to 10000" in problems["max_concurrent_calls"]
    assert raised.value.message.startswith("max_concurrent_calls: ")
    assert not Agent.objects.filter(name="refused").exists()
    assert AuditEvent.objects.count() == before
