"""People of every role, agents, calls submitted through the real pipeline, and config files."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from common.settings_config import config_reload
from tools_app.models import Invocation
from tools_app.services.invocation_submit import CallRequest, invocation_submit
from trust_app.models import Agent
from trust_app.services.agents import agent_create, person_create

PASSWORD = "pw-approvals-123456"


@pytest.fixture
def approval_config(tmp_path: Path, settings: Any) -> Iterator[Callable[[str], None]]:
    """Write a config file for this test and load it; the defaults come back afterwards."""
    # Read before any override: at teardown django's settings still hold this test's path.
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
    def make(role: str = "operator", name: str | None = None) -> Any:
        username = name or f"{role}-{uuid.uuid4().hex[:8]}"
        return person_create(username=username, role=role, password=PASSWORD)

    return make


@pytest.fixture
def make_agent_row() -> Callable[..., Agent]:
    def make(level: str = "standard", autonomy: str = "locked", owner: Any = None) -> Agent:
        name = f"agent-{uuid.uuid4().hex[:10]}"
        return agent_create(name=name, access_level=level, autonomy=autonomy, owner=owner).agent

    return make


@pytest.fixture
def submit() -> Callable[..., Invocation]:
    def call(agent: Agent, tool: str = "test_echo", arguments: dict[str, Any] | None = None) -> Any:
        return invocation_submit(
            agent=agent, call=CallRequest(tool=tool, arguments=arguments or {"text": "hi"})
        ).invocation

    return call
