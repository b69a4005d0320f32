"""A call's body is JSON taken as typed: a value of another JSON type is refused (400
naming the field), never turned into what the schema wanted. DRF's own fields would
take ``12`` as the text ``"12"`` and ``"5"`` as the number 5, so an idempotency key or
a wait a client did not mean would be used.

Each refusal is audited and records no call; the control beside it, the same body with
the value's right type, is taken.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from audit_app.models import AuditEvent
from tests.tools_app.api.conftest import AgentClient
from tools_app.models import Invocation

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

WRONG = [
    ("tool", 12, "test_echo"),
    ("idempotency_key", 12, "12"),
    ("task_id", 7, "7"),
    ("wait", "5", 5),
    ("wait", True, 1),
    ("wait", 1.5, 1),
]


def _body(field: str, value: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"tool": "test_echo", "arguments": {"text": "x"}}
    body[field] = value
    return body


@pytest.mark.parametrize(("field", "wrong", "right"), WRONG)
def test_a_call_whose_value_has_another_json_type_is_refused(
    make_agent: Callable[..., AgentClient], field: str, wrong: Any, right: Any
) -> None:
    client = make_agent(autonomy="full")
    refused = client.http.post("/api/v1/invocations/", json=_body(field, wrong))
    assert refused.status_code == 400, refused.text
    assert list(refused.json()["error"]["details"]["fields"]) == [field], refused.json()
    assert not Invocation.objects.filter(agent=client.agent).exists()
    assert AuditEvent.objects.filter(kind="request.refused", agent_id=client.agent.id).exists()

    taken = client.http.post("/api/v1/invocations/", json=_body(field, right))
    assert taken.status_code == 201, taken.text


@pytest.mark.parametrize(("field", "wrong", "right"), WRONG[:3])
def test_a_batch_call_whose_value_has_another_json_type_refuses_the_batch(
    make_agent: Callable[..., AgentClient], field: str, wrong: Any, right: Any
) -> None:
    client = make_agent(autonomy="full")
    good = {"tool": "test_echo", "arguments": {"text": "a"}}
    refused = client.http.post(
        "/api/v1/invocations/batch/", json={"calls": [good, _body(field, wrong)]}
    )
    assert refused.status_code == 400, refused.text
    assert not Invocation.objects.filter(agent=client.agent).exists(), "nothing half-taken"

    taken = client.http.post(
        "/api/v1/invocations/batch/", json={"calls": [good, _body(field, right)]}
    )
    assert taken.status_code == 200, taken.text
    assert Invocation.objects.filter(agent=client.agent).count() == 2


@pytest.mark.parametrize(("field", "wrong"), [("max_concurrency", "2"), ("wait", "1")])
def test_a_batchs_own_numbers_take_numbers_only(
    make_agent: Callable[..., AgentClient], field: str, wrong: str
) -> None:
    client = make_agent(autonomy="full")
    body: dict[str, Any] = {"calls": [{"tool": "test_echo", "arguments": {"text": "a"}}]}
    refused = client.http.post("/api/v1/invocations/batch/", json={**body, field: wrong})
    assert refused.status_code == 400, refused.text
    assert field in refused.json()["error"]["details"]["fields"], refused.json()
    taken = client.http.post("/api/v1/invocations/batch/", json={**body, field: int(wrong)})
    assert taken.status_code == 200, taken.text


def test_a_wait_in_the_query_string_is_still_its_text(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent(autonomy="full")
    made = client.call("test_echo", {"text": "x"}, wait=5)
    assert made.status_code == 201, made.text
    again = client.get(made.json()["id"], wait=1)  # sent as ?wait=1
    assert again.status_code == 200, again.text
    assert client.http.get(f"/api/v1/invocations/{made.json()['id']}/?wait=x").status_code == 400


def test_the_refusal_says_what_is_allowed(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent(autonomy="full")
    refused = client.http.post("/api/v1/invocations/", json=_body("idempotency_key", 12))
    assert refused.json()["error"]["message"] == (
        "idempotency_key: not a string; a string of 1 to 200 characters"
    ), refused.json()
