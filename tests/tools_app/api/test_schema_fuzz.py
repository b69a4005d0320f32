"""schemathesis against the published OpenAPI schema: generated requests never get a 5xx."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from common.testing import RunningProcess
from tests.tools_app.api.conftest import AgentClient

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

EXAMPLES_PER_OPERATION = 70
cases_sent: list[int] = []


@pytest.fixture
def api_schema(daphne_server: str, celery_worker_process: RunningProcess) -> Any:
    return schemathesis.openapi.from_url(daphne_server + "/api/schema/")


@pytest.fixture
def fuzz_agent(make_agent: Callable[..., AgentClient]) -> AgentClient:
    # Slow tools are denied so generated calls cannot clog the shared worker.
    return make_agent(
        name="fuzz-agent", denied=["test_counter", "test_counter_idempotent", "test_sleep"]
    )


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_generated_requests_never_get_a_server_error(case: Any, fuzz_agent: AgentClient) -> None:
    response = case.call(headers={"Authorization": f"Bearer {fuzz_agent.token}"}, timeout=30)
    cases_sent.append(1)
    assert response.status_code < 500, (case.method, case.path, response.text[:500])
    if response.status_code >= 400:
        assert set(response.json()) == {"error"}, response.text[:500]


def test_at_least_500_cases_were_generated() -> None:
    assert sum(cases_sent) >= 500, sum(cases_sent)
