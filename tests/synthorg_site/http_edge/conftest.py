"""Agents on the real daphne server, and what the audit log holds for a request."""

from __future__ import annotations

from typing import Any

from audit_app.models import AuditEvent
from common.platform.redis import redis_client
from tests.approvals_app.conftest import make_agent_row, make_person, submit  # noqa: F401
from tests.tools_app.api.conftest import AgentClient, make_agent  # noqa: F401 - a fixture
from tools_app.models import Invocation


def refusals_for(response: Any) -> list[AuditEvent]:
    """The request.refused events written for one answered request (by its request id)."""
    request_id = response.headers["X-Request-ID"]
    return list(AuditEvent.objects.filter(request_id=request_id, kind="request.refused"))


def invocations_of(client: AgentClient) -> int:
    return Invocation.objects.filter(agent=client.agent).count()


def assert_envelope(response: Any, status: int, code: str, *needles: str) -> dict[str, Any]:
    """A JSON error in API.md's envelope, whose message holds every needle."""
    assert response.status_code == status, (response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith("application/json"), response.text[:300]
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code, body
    for needle in needles:
        assert needle in body["error"]["message"], (needle, body["error"]["message"])
    assert "ErrorDetail(" not in response.text
    return dict(body["error"])


def refusals_of_request(request_id: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(request_id=request_id, kind="request.refused"))


def stranger_budget_reset(address: str = "127.0.0.1") -> None:
    """Start afresh the current minute's refusal-audit budget of tokenless clients from
    ``address``: every test's strangers share it, and a flood test may have spent it."""
    client = redis_client()
    for key in client.scan_iter(f"synthorg:refusals:anonymous:{address}:*"):
        client.delete(key)
