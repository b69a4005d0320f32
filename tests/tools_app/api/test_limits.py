"""Payload size (413), per-agent rate limits (429 with Retry-After), wait bounds (400)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.conf import settings

from tests.tools_app.api.conftest import AgentClient
from tools_app.ratelimit import rate_limit_hit

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_an_oversized_body_is_413(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    big = "x" * (settings.SYNTHORG_MAX_REQUEST_BYTES + 10)
    response = client.call("test_echo", {"text": big})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


def test_over_the_rate_limit_is_429_with_retry_after(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    limit = settings.SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE
    # Fill the agent's window the way the API counts calls, then one more call.
    for _ in range(limit):
        rate_limit_hit(f"agent:{client.agent.id}", limit=limit, window_seconds=60)
    response = client.call("test_echo", {"text": "one too many"})
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(response.headers["Retry-After"]) <= 60


def test_wait_out_of_range_is_400(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    assert client.call("test_echo", {"text": "x"}, wait=61).status_code == 400
    created = client.call("test_echo", {"text": "x"}).json()
    assert client.http.get(f"/api/v1/invocations/{created['id']}/?wait=-1").status_code == 400


def test_malformed_json_is_400_in_the_envelope(make_agent: Callable[..., AgentClient]) -> None:
    response = make_agent().http.post(
        "/api/v1/invocations/", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_argument"


def test_rate_limit_window_slides() -> None:
    key = "test:slide"
    assert [rate_limit_hit(key, limit=2, window_seconds=1) for _ in range(3)][:2] == [0, 0]
    assert rate_limit_hit(key, limit=2, window_seconds=1) >= 1
