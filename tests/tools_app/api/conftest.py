"""Agents with tokens, and an HTTP client for the real daphne server."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from trust_app.models import Agent, AgentPermissions
from trust_app.services.agents import agent_create


@dataclass
class AgentClient:
    agent: Agent
    token: str
    http: httpx.Client

    def call(
        self, tool: str, arguments: dict[str, Any] | None = None, **body: Any
    ) -> httpx.Response:
        return self.http.post(
            "/api/v1/invocations/", json={"tool": tool, "arguments": arguments or {}, **body}
        )

    def get(self, invocation_id: str, wait: int = 0) -> httpx.Response:
        return self.http.get(f"/api/v1/invocations/{invocation_id}/", params={"wait": wait})


@pytest.fixture
def make_agent(daphne_server: str) -> Iterator[Callable[..., AgentClient]]:
    clients: list[httpx.Client] = []

    def make(
        level: str = "standard", *, denied: list[str] | None = None, **kwargs: Any
    ) -> AgentClient:
        # Unique names: workspaces outlive the rows that a transactional test flushes.
        name = kwargs.pop("name", None) or f"agent-{uuid.uuid4().hex[:10]}"
        created = agent_create(name=name, access_level=level, **kwargs)
        if denied:
            AgentPermissions.objects.create(agent=created.agent, denied=denied)
        http = httpx.Client(
            base_url=daphne_server,
            headers={"Authorization": f"Bearer {created.token}"},
            timeout=90,
        )
        clients.append(http)
        return AgentClient(agent=created.agent, token=created.token, http=http)

    yield make
    for http in clients:
        http.close()
