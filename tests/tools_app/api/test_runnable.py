"""People are asked only about calls that can run, through the public API.

A shell call with a command string, where command strings are switched off (the
default), is refused when submitted: no approval request is opened. Disabling a
tool withdraws its pending requests: the waiting agent gets the admin's reason at
once, and an operator can no longer approve. A call for people whose sandbox
the workers report down is refused too. Positive controls: the argv form of
the same call is asked about; another tool's request stays pending and approvable.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import websockets
from django.db import connection
from django.test import Client
from websockets.typing import Origin

from approvals_app.models import ApprovalRequest
from audit_app.models import AuditEvent
from audit_app.record import Actor
from common.platform.heartbeat import SANDBOX_PROBE_PREFIX
from common.platform.redis import redis_client
from common.testing import run_fresh
from tests.approvals_app.conftest import PASSWORD
from tests.approvals_app.test_consumers import session_cookie, ws_url
from tests.tools_app.api.conftest import AgentClient
from tools_app.services.tool_registry import tool_enabled_set
from trust_app.services.agents import person_create, person_token_issue

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def operator(daphne_server: str) -> Iterator[httpx.Client]:
    person = person_create(username=f"op-{uuid.uuid4().hex[:8]}", role="operator", password=None)
    with httpx.Client(
        base_url=daphne_server,
        headers={"Authorization": f"Bearer {person_token_issue(person=person)}"},
        timeout=60,
    ) as client:
        yield client


def submitted(client: AgentClient, tool: str, arguments: dict[str, Any]) -> Any:
    response = client.call(tool, arguments, wait=0)
    assert response.status_code == 201, response.text
    return response.json()


def test_a_command_string_where_they_are_off_is_refused_before_anyone_is_asked(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent("elevated", autonomy="locked")
    refused = submitted(client, "shell_command", {"command": "echo hi"})
    assert refused["status"] == "denied", refused
    assert refused["decision"]["rule"] == "tool_settings", refused
    assert "command strings are switched off" in refused["decision"]["reason"]
    assert refused["approval"] is None
    assert not ApprovalRequest.objects.filter(invocation_id=refused["id"]).exists()
    audited = AuditEvent.objects.get(kind="invocation.decided", invocation_id=refused["id"])
    assert audited.outcome == "deny" and audited.rule == "tool_settings"

    # Positive control: the argv form of the same command goes to people.
    asked = submitted(client, "shell_command", {"argv": ["echo", "hi"]})
    assert asked["status"] == "pending_approval", asked
    assert ApprovalRequest.objects.filter(invocation_id=asked["id"]).exists()


def test_disabling_a_tool_withdraws_its_pending_requests_with_the_reason(
    make_agent: Callable[..., AgentClient], operator: httpx.Client
) -> None:
    client = make_agent("standard", autonomy="locked")
    doomed = submitted(client, "test_echo", {"text": "to be withdrawn"})
    kept = submitted(client, "test_bad_output", {"text": "stays"})
    assert doomed["status"] == kept["status"] == "pending_approval"

    # The agent is waiting on its call while the admin disables the tool.
    waited: dict[str, Any] = {}

    def wait_for_it() -> None:
        waited["answer"] = client.get(doomed["id"], wait=30).json()

    waiter = threading.Thread(target=wait_for_it)
    waiter.start()
    admin = Client()
    admin.force_login(person_create(username="tool-admin", role="admin", password=None))
    switched = admin.post("/tools/test_echo/switch/", {"enabled": "0", "reason": "leaks notes"})
    assert switched.status_code == 302
    waiter.join(timeout=40)
    assert not waiter.is_alive()

    answer = waited["answer"]
    assert answer["status"] == "cancelled", answer
    assert answer["error"]["code"] == "tool_disabled"
    assert "disabled the tool test_echo; leaks notes" in answer["error"]["message"], answer
    # The public contract names a withdrawn request's status "expired".
    assert answer["approval"]["status"] == "expired"
    pending = operator.get("/api/v1/approvals/", params={"status": "pending"}).json()["results"]
    assert doomed["approval"]["id"] not in {row["id"] for row in pending}
    late = operator.post(
        f"/api/v1/approvals/{doomed['approval']['id']}/decide/",
        json={"decision": "approve", "reason": "too late"},
    )
    assert late.status_code == 409, late.text
    assert AuditEvent.objects.filter(kind="approval.withdrawn", invocation_id=doomed["id"]).exists()

    # Positive control: another tool's request is untouched and can still be approved.
    assert kept["approval"]["id"] in {row["id"] for row in pending}
    approved = operator.post(
        f"/api/v1/approvals/{kept['approval']['id']}/decide/",
        json={"decision": "approve", "reason": "fine"},
    )
    assert approved.status_code == 200, approved.text


def test_a_call_for_people_is_refused_while_its_sandbox_is_reported_down(
    make_agent: Callable[..., AgentClient],
) -> None:
    key = SANDBOX_PROBE_PREFIX + "subprocess"  # test_echo is file_system: subprocess
    redis = redis_client()
    before = redis.get(key)
    # The worker's own probe is put back with the time it had left: a shorter life
    # would leave later tests without it until the worker probes again.
    left_ms = redis.pttl(key)
    down = {"ok": False, "required": True, "reason": "probe says the runner cannot start"}
    redis.set(key, json.dumps(down), ex=60)
    try:
        asks = make_agent("standard", autonomy="locked")
        refused = submitted(asks, "test_echo", {"text": "x"})
        assert refused["status"] == "denied", refused
        assert refused["decision"]["rule"] == "sandbox_unavailable"
        assert "the runner cannot start" in refused["decision"]["reason"]
        assert not ApprovalRequest.objects.filter(invocation_id=refused["id"]).exists()
        # A call nobody is asked about is not held back here: the worker says why.
        free = submitted(make_agent("standard", autonomy="full"), "test_echo", {"text": "x"})
        assert free["status"] != "denied", free
    finally:
        if before is None:
            redis.delete(key)
        else:
            redis.set(key, before, px=left_ms if left_ms > 0 else None)
    # Positive control: with the backend not reported down, the same call is asked about.
    asked = submitted(asks, "test_echo", {"text": "x"})
    assert asked["status"] == "pending_approval", asked


def test_the_operators_inbox_drops_a_withdrawn_request_live(
    make_agent: Callable[..., AgentClient], daphne_server: str
) -> None:
    client = make_agent("standard", autonomy="locked")
    doomed = submitted(client, "test_echo", {"text": "watched"})
    request_id = doomed["approval"]["id"]
    operator = person_create(username="inbox-op", role="operator", password=PASSWORD)
    admin = person_create(username="inbox-admin", role="admin", password=None)
    cookie = session_cookie(operator)

    def disable() -> None:
        try:
            tool_enabled_set(
                name="test_echo", enabled=False, actor=Actor.person(admin), reason="watched"
            )
        finally:
            connection.close()  # this thread's own connection, before the database goes

    async def watch() -> str:
        async with websockets.connect(
            ws_url(daphne_server),
            origin=Origin(daphne_server),
            additional_headers={"Cookie": cookie},
            open_timeout=10,
        ) as socket:
            first = str(await asyncio.wait_for(socket.recv(), timeout=10))
            # Positive control: the request is in the inbox as pending before the switch.
            assert f'data-request="{request_id}" data-status="pending"' in first
            await asyncio.to_thread(disable)
            for _ in range(10):  # bounded: the settled row comes within a few frames
                frame = str(await asyncio.wait_for(socket.recv(), timeout=15))
                if f'data-request="{request_id}"' in frame:
                    return frame
            raise AssertionError("the withdrawn request never reached the inbox")

    frame = run_fresh(watch)
    assert 'data-status="cancelled"' in frame, frame
