"""Fixtures for the trust tests: config files, people, agents and settled calls."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from common.settings_config import config_reload
from tools_app.models import Invocation
from trust_app.models import Agent
from trust_app.services.agents import agent_create, person_create

PASSWORD = "pw-trust-123456"

# A per-category config where terminal needs one task and a person to reach standard.
TERMINAL_GATED = """
trust:
  strategy: per_category
  initial_levels:
    file_system: restricted
    terminal: restricted
  promotion_criteria:
    terminal:
      restricted_to_standard:
        tasks_completed: 1
        quality_score_min: 7.0
        requires_human_approval: true
"""
SEED_MILESTONE = """
trust:
  strategy: milestone
  initial_level: sandboxed
  milestones:
    sandboxed_to_restricted: {tasks_completed: 5, quality_score_min: 7.0, auto_promote: true}
    restricted_to_standard:
      {tasks_completed: 20, quality_score_min: 8.0, time_active_days: 7, auto_promote: true}
    standard_to_elevated: {requires_human_approval: true, clean_history_days: 14}
  re_verification:
    {enabled: true, interval_days: 90, decay_on_idle_days: 30, decay_on_error_rate: 0.15}
"""


@pytest.fixture
def trust_config(tmp_path: Path, settings: Any) -> Iterator[Callable[[str], None]]:
    """Write a config file for this test and load it; the defaults come back afterwards."""
    original = django_settings.SYNTHORG_CONFIG

    def use(text: str) -> None:
        path = tmp_path / f"synthorg-{uuid.uuid4().hex[:6]}.yaml"
        path.write_text(text)
        settings.SYNTHORG_CONFIG = str(path)
        config_reload()

    yield use
    settings.SYNTHORG_CONFIG = original
    config_reload()


@pytest.fixture
def make_person() -> Callable[..., Any]:
    def make(role: str = "operator") -> Any:
        return person_create(
            username=f"{role}-{uuid.uuid4().hex[:8]}", role=role, password=PASSWORD
        )

    return make


@pytest.fixture
def make_agent() -> Callable[..., Agent]:
    def make(level: str = "standard", owner: Any = None) -> Agent:
        name = f"agent-{uuid.uuid4().hex[:10]}"
        return agent_create(name=name, access_level=level, owner=owner).agent

    return make


@pytest.fixture
def settled_call() -> Callable[..., Invocation]:
    def make(
        agent: Agent, status: str = "succeeded", category: str = "terminal", task_id: str = ""
    ) -> Invocation:
        return Invocation.objects.create(
            agent=agent,
            tool="shell_command",
            category=category,
            action_type="code:write",
            safety_class="write",
            arguments_hash="0" * 64,
            status=status,
            task_id=task_id,
            finished_at=timezone.now(),
        )

    return make
