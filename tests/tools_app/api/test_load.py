"""A hundred agents calling at once: every call answered, each with its own result."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from common.testing import RunningProcess
from tools_app.models import Invocation
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

AGENTS = 100


def test_a_hundred_agents_calling_at_once(
    daphne_server: str, celery_worker_process: RunningProcess
) -> None:
    run = uuid.uuid4().hex[:6]
    tokens = [
        agent_create(name=f"crowd-{run}-{i:03d}", access_level="standard").token
        for i in range(AGENTS)
    ]

    def call(index: int) -> tuple[int, dict[str, object]]:
        with httpx.Client(base_url=daphne_server, timeout=120) as http:
            response = http.post(
                "/api/v1/invocations/",
                json={"tool": "test_echo", "arguments": {"text": f"agent {index}"}, "wait": 60},
                headers={"Authorization": f"Bearer {tokens[index]}"},
            )
            return response.status_code, response.json()

    with ThreadPoolExecutor(max_workers=AGENTS) as pool:
        answers = list(pool.map(call, range(AGENTS)))

    refused = [(index, body) for index, (status, body) in enumerate(answers) if status != 201]
    assert not refused, refused[:3]
    assert [body["status"] for _, body in answers] == ["succeeded"] * AGENTS
    for index, (_, body) in enumerate(answers):
        result = body["result"]
        assert isinstance(result, dict) and result["content"] == f"agent {index}\n"
    assert Invocation.objects.filter(status="succeeded").count() >= AGENTS
