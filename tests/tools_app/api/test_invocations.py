"""A governed tool call end to end: real daphne, a real Celery worker, PostgreSQL and Redis."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audit_app.models import AuditEvent
from common.testing import RunningProcess
from tests.tools_app.api.conftest import AgentClient
from tools_app.events import CARRIED_BODY_MAX_CHARS, publish_invocation_status, watch_invocation
from tools_app.models import Invocation

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _worker(celery_worker_process: RunningProcess) -> RunningProcess:
    return celery_worker_process


def test_an_allowed_call_returns_its_result(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    response = client.call("test_echo", {"text": "hello world"}, wait=30)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["status"] == "succeeded", body
    assert body["decision"]["outcome"] == "allow"
    assert body["result"]["content"] == "hello world\n"
    assert body["result"]["exit_code"] == 0
    assert body["result"]["is_error"] is False
    assert body["error"] is None and body["approval"] is None
    kinds = list(
        AuditEvent.objects.filter(invocation_id=body["id"])
        .order_by("id")
        .values_list("kind", flat=True)
    )
    assert kinds == [
        "invocation.decided",
        "invocation.started",
        "invocation.finished",
    ] or kinds == [
        "invocation.decided",
        "invocation.finished",
    ]


def test_a_denied_call_says_why_and_never_runs(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent(denied=["test_counter"])
    response = client.call("test_counter", {"seconds": 0}, wait=5)
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "denied"
    assert body["decision"]["outcome"] == "deny"
    assert "test_counter" in body["decision"]["reason"]
    assert body["error"]["code"] == "denied"
    assert body["result"] is None
    assert not (Path(client.agent.workspace) / "counter.txt").exists()
    event = AuditEvent.objects.get(invocation_id=body["id"], kind="invocation.decided")
    assert event.outcome == "deny" and event.reason == body["decision"]["reason"]


def test_invalid_arguments_are_400_and_audited(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    response = client.call("test_echo", {"text": 42, "extra": True})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_argument"
    assert "arguments.text" in error["message"]
    assert "extra" in error["message"]
    assert not Invocation.objects.filter(agent=client.agent).exists()
    event = AuditEvent.objects.get(agent_id=client.agent.id, kind="invocation.refused")
    assert event.outcome == "invalid_argument" and "arguments.text" in event.reason


def test_an_unknown_tool_is_404_and_audited(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    response = client.call("no_such_tool", {})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert AuditEvent.objects.filter(agent_id=client.agent.id, outcome="unknown_tool").exists()


def test_idempotent_repeat_and_conflict(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    first = client.call("test_echo", {"text": "once"}, idempotency_key="k-1", wait=30)
    again = client.call("test_echo", {"text": "once"}, idempotency_key="k-1")
    other = client.call("test_echo", {"text": "twice"}, idempotency_key="k-1")
    assert (first.status_code, again.status_code, other.status_code) == (201, 200, 409)
    assert again.json()["id"] == first.json()["id"]
    assert other.json()["error"]["code"] == "conflict"
    assert Invocation.objects.filter(agent=client.agent).count() == 1


def test_an_output_schema_violation_fails_the_call(make_agent: Callable[..., AgentClient]) -> None:
    body = make_agent().call("test_bad_output", {}, wait=30).json()
    assert body["status"] == "failed"
    assert body["error"]["code"] == "output_invalid"
    assert "exit_code" in body["error"]["message"]


def test_a_call_past_its_time_limit_is_timed_out(make_agent: Callable[..., AgentClient]) -> None:
    body = make_agent().call("test_sleep", {"seconds": 1}, wait=30).json()
    assert body["status"] == "timed_out", body
    assert body["error"]["code"] == "timeout"


def test_get_waits_for_the_result(make_agent: Callable[..., AgentClient]) -> None:
    client = make_agent()
    created = client.call("test_counter", {"seconds": 1}).json()
    assert created["status"] in ("queued", "running")
    body = client.get(created["id"], wait=30).json()
    assert body["status"] == "succeeded"
    assert body["result"]["content"].strip() == "done"


def test_another_agents_invocation_is_404(make_agent: Callable[..., AgentClient]) -> None:
    owner, stranger = make_agent(), make_agent()
    created = owner.call("test_echo", {"text": "mine"}).json()
    assert stranger.get(created["id"]).status_code == 404
    assert stranger.http.post(f"/api/v1/invocations/{created['id']}/cancel/").status_code == 404


def test_built_in_file_tools_run_through_the_pipeline(
    make_agent: Callable[..., AgentClient],
) -> None:
    from trust_app.services.agents import workspace_grant

    client = make_agent()
    workspace = Path(client.agent.workspace)
    (workspace / "notes.txt").write_text("first line\nAKIAIOSFODNN7EXAMPLE\n")
    workspace_grant(workspace)
    read = client.call("read_file", {"path": "notes.txt"}, wait=30).json()
    assert read["status"] == "succeeded", read
    assert "first line" in read["result"]["content"]
    assert "AKIAIOSFODNN7EXAMPLE" not in read["result"]["content"], "secrets are redacted"
    assert "AKIAIOSFODNN7EXAMPLE" in Invocation.objects.get(id=read["id"]).raw_content
    written = client.call(
        "write_file", {"path": "out.txt", "content": "made by the agent\n"},
        idempotency_key="w-1", wait=30,
    ).json()  # fmt: skip
    assert written["status"] == "succeeded", written
    assert (workspace / "out.txt").read_text() == "made by the agent\n"
    escape = client.call("read_file", {"path": "../../etc/passwd"}, wait=30).json()
    assert escape["status"] in ("denied", "failed")
    assert "root:" not in str(escape)


def test_a_consequential_call_without_an_idempotency_key_runs_once(
    make_agent: Callable[..., AgentClient],
) -> None:
    """The key is optional for every tool: write_file (a tool that asks clients for a
    key) runs without one, once per request, exactly like the call that sends one."""
    from trust_app.services.agents import workspace_grant

    client = make_agent()
    workspace = Path(client.agent.workspace)
    workspace_grant(workspace)
    keyed = client.call(
        "write_file", {"path": "keyed.txt", "content": "with a key\n"},
        idempotency_key=f"k-{uuid.uuid4()}", wait=30,
    )  # fmt: skip
    assert keyed.status_code == 201, keyed.text
    assert keyed.json()["status"] == "succeeded", keyed.json()
    for attempt in range(2):
        bare = client.call(
            "write_file", {"path": "bare.txt", "content": f"no key {attempt}\n"}, wait=30
        )
        assert bare.status_code == 201, bare.text
        body = bare.json()
        assert body["status"] == "succeeded", body
        assert body["idempotency_key"] is None
        assert (workspace / "bare.txt").read_text() == f"no key {attempt}\n"
    assert (workspace / "keyed.txt").read_text() == "with a key\n"
    assert Invocation.objects.filter(agent=client.agent, tool="write_file").count() == 3
    assert not AuditEvent.objects.filter(agent_id=client.agent.id, kind="invocation.refused")


def _terminal_message(group_of: str, start: Callable[[], object]) -> dict[str, Any]:
    """The terminal status message a waiter on invocation ``group_of`` receives after ``start``."""

    async def listen() -> dict[str, Any]:
        async with watch_invocation(group_of) as watch:
            assert watch is not None
            await asyncio.to_thread(start)
            message = await watch.until_terminal(30)
        assert message is not None, "no terminal status message within 30 s"
        return message

    found: list[dict[str, Any]] = []
    # A thread of its own: a browser test may keep an event loop running here.
    thread = threading.Thread(target=lambda: found.append(asyncio.run(listen())))
    thread.start()
    thread.join(60)
    assert found, "the listener did not finish"
    return found[0]


@pytest.mark.parametrize(
    ("tool", "arguments", "status"),
    [
        ("test_echo", {"text": "carried"}, "succeeded"),
        ("test_bad_output", {}, "failed"),
        ("test_sleep", {"seconds": 0.2}, "timed_out"),
    ],
    ids=["succeeded", "output_invalid", "timed_out"],
)
def test_a_waited_answer_is_what_the_database_says(
    make_agent: Callable[..., AgentClient], tool: str, arguments: dict[str, Any], status: str
) -> None:
    client = make_agent()
    answer = client.call(tool, arguments, wait=30)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["status"] == status, body
    assert client.get(body["id"]).json() == body


def test_a_listener_gets_the_rendered_invocation_in_the_terminal_message(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    # Runs for 2 s before its time limit ends it: time enough to subscribe.
    created = client.call("test_sleep", {"seconds": 2}, wait=0).json()
    assert created["status"] in ("queued", "running"), created
    message = _terminal_message(created["id"], lambda: None)
    assert message["status"] == "timed_out"
    assert message["invocation"] == client.get(created["id"]).json()


@pytest.mark.parametrize(
    ("size", "carried"), [(100, True), (CARRIED_BODY_MAX_CHARS + 1, False)], ids=["small", "large"]
)
def test_only_a_small_invocation_travels_in_its_status_message(size: int, carried: bool) -> None:
    invocation_id = str(uuid.uuid4())
    body = {"id": invocation_id, "result": {"content": "x" * size}, "error": None}
    message = _terminal_message(
        invocation_id, lambda: publish_invocation_status(invocation_id, "succeeded", body)
    )
    assert message["status"] == "succeeded"
    assert (message.get("invocation") == body) is carried
    assert ("invocation" in message) is carried
