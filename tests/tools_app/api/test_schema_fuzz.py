"""schemathesis against the published OpenAPI schema: generated requests never get a 5xx.

Positive and negative cases for every operation, at least 500 in all; every refusal
speaks the error envelope.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.generation import GenerationMode

from common.testing import RunningProcess
from tests.tools_app.api.conftest import AgentClient
from trust_app.services.agents import person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

EXAMPLES_PER_OPERATION_AND_MODE = 60
MINIMUM_CASES = 500


def test_generated_requests_never_get_a_server_error(
    daphne_server: str,
    celery_worker_process: RunningProcess,
    make_agent: Callable[..., AgentClient],
) -> None:
    # Slow tools are denied so generated calls cannot clog the shared worker.
    agent = make_agent(denied=["test_counter", "test_counter_idempotent", "test_sleep"])
    agent_headers = {"Authorization": f"Bearer {agent.token}"}
    admin = person_create(username="fuzz-admin", role="admin", password=None)
    admin_headers = {"Authorization": f"Bearer {person_token_issue(person=admin)}"}
    schema = schemathesis.openapi.from_url(daphne_server + "/api/schema/")
    sent: list[tuple[str, str, int]] = []
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) >= 8, [op.label for op in operations]

    for operation in operations:
        # People's endpoints get an admin's token, agents' endpoints the agent's.
        chosen = admin_headers if "/agents/" in operation.path else agent_headers
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES_PER_OPERATION_AND_MODE,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def run(case: Any) -> None:
                # run() is called within this iteration, so `chosen` is the current one.
                response = case.call(base_url=daphne_server, headers=dict(chosen), timeout=30)  # noqa: B023
                sent.append((case.method, case.path, response.status_code))
                assert response.status_code < 500, (case.method, case.path, response.text[:500])
                if response.status_code >= 400 and "json" in response.headers.get(
                    "content-type", ""
                ):
                    assert set(response.json()) == {"error"}, response.text[:500]

            try:
                run()
            except Unsatisfiable:
                # An operation with nothing to get wrong (no body, no parameters) has no
                # negative cases; its positive ones ran above.
                assert mode is GenerationMode.NEGATIVE
    assert len(sent) >= MINIMUM_CASES, len(sent)
