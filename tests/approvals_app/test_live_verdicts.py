"""Live verdicts: a pending request is decided again when what it depends on changes.

Attack: an admin lowers an agent's level while its call waits for people. The call is
withdrawn at once: the waiting agent's REST answer is ``denied`` with the reason, the
request closes (an approval after it is a 409 naming why), an audit row says so, and the
operators' open inbox marks it live. A change whose re-decision never ran (written
behind the services' back) cannot be approved past either. Controls: a call the lower
level still permits stays pending and approvable; a change that would let a call run
without a person does not run it, the card says the policy would no longer ask.
"""

from __future__ import annotations

import asyncio
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
from common.testing import run_fresh
from tests.approvals_app.conftest import PASSWORD
from tests.approvals_app.test_consumers import session_cookie, ws_url
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from trust_app.models import Agent, AgentPermissions
from trust_app.services.agents import person_create, person_token_issue
from trust_app.services.permissions import agent_permissions_update

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent

LISTED = ["ls", "-la"]  # a listed command: standard terminal access permits it


@pytest.fixture
def operator(daphne_server: str) -> Iterator[httpx.Client]:
    person = person_create(username=f"op-{uuid.uuid4().hex[:8]}", role="operator", password=None)
    with httpx.Client(
        base_url=daphne_server,
        headers={"Authorization": f"Bearer {person_token_issue(person=person)}"},
        timeout=60,
    ) as client:
        yield client


def _admin() -> Actor:
    return Actor.person(
        person_create(username=f"admin-{uuid.uuid4().hex[:6]}", role="admin", password=None)
    )


def _set(agent: Agent, actor: Actor, **changes: Any) -> None:
    """An admin's change through the one service that writes it (the editor's)."""
    fresh = Agent.objects.get(pk=agent.pk)
    permissions = AgentPermissions.objects.filter(agent=fresh).first()
    current: dict[str, Any] = {
        "access_level": fresh.access_level,
        "autonomy": fresh.autonomy,
        "allowed": permissions.allowed if permissions else [],
        "denied": permissions.denied if permissions else [],
        "sub_constraints": permissions.sub_constraints if permissions else {},
        "max_concurrent_calls": fresh.max_concurrent_calls,
    }
    agent_permissions_update(agent=fresh, actor=actor, **{**current, **changes})


def _asked(client: AgentClient, tool: str, arguments: dict[str, Any]) -> Any:
    response = client.call(tool, arguments, wait=0)
    assert response.status_code == 201, response.text
    assert response.json()["status"] == "pending_approval", response.text
    return response.json()


def _decide(operator: httpx.Client, request_id: str) -> httpx.Response:
    return operator.post(
        f"/api/v1/approvals/{request_id}/decide/", json={"decision": "approve", "reason": "ok"}
    )


def test_lowering_the_level_withdraws_a_waiting_call_it_no_longer_permits(
    make_agent: Callable[..., AgentClient], operator: httpx.Client
) -> None:
    client = make_agent("standard", autonomy="locked")
    doomed = _asked(client, "shell_command", {"argv": LISTED})
    kept = _asked(client, "test_echo", {"text": "file_system: every level permits it"})

    # The agent waits on its call while the admin lowers its level.
    waited: dict[str, Any] = {}

    def wait_for_it() -> None:
        waited["answer"] = client.get(doomed["id"], wait=30).json()

    waiter = threading.Thread(target=wait_for_it)
    waiter.start()
    _set(client.agent, _admin(), access_level="restricted")
    waiter.join(timeout=40)
    assert not waiter.is_alive()

    answer = waited["answer"]
    assert answer["status"] == "denied", answer
    assert answer["error"]["code"] == "no_longer_permitted", answer
    message = answer["error"]["message"]
    assert "changed the agent's access level" in message, message
    assert "level restricted does not permit category terminal" in message, message
    assert answer["approval"]["status"] == "denied"
    assert client.get(doomed["id"]).json()["status"] == "denied"

    # Nobody can approve it any more, and the refusal says why.
    late = _decide(operator, doomed["approval"]["id"])
    assert late.status_code == 409, late.text
    assert "withdrawn" in late.json()["error"]["message"]
    assert "level restricted does not permit category terminal" in late.json()["error"]["message"]
    withdrawn = AuditEvent.objects.get(kind="approval.withdrawn", invocation_id=doomed["id"])
    assert withdrawn.outcome == "withdrawn" and withdrawn.data["verdict"] == "withdrawn"
    pending = operator.get("/api/v1/approvals/", params={"status": "pending"}).json()["results"]
    assert doomed["approval"]["id"] not in {row["id"] for row in pending}

    # Control: the call the lower level still permits is untouched and can be approved.
    assert kept["approval"]["id"] in {row["id"] for row in pending}
    assert ApprovalRequest.objects.get(id=kept["approval"]["id"]).verdict == ""
    approved = _decide(operator, kept["approval"]["id"])
    assert approved.status_code == 200, approved.text


def test_a_change_that_does_not_touch_the_call_leaves_it_pending_and_approvable(
    make_agent: Callable[..., AgentClient], operator: httpx.Client
) -> None:
    client = make_agent("standard", autonomy="locked")
    asked = _asked(client, "shell_command", {"argv": LISTED})
    # Another tool on the denied list and a lower concurrency cap: nothing this call uses.
    _set(client.agent, _admin(), denied=["test_counter"], max_concurrent_calls=2)
    assert AuditEvent.objects.filter(
        kind="agent.permissions_updated", agent_id=client.agent.id
    ).exists()
    assert client.get(asked["id"]).json()["status"] == "pending_approval"
    request = ApprovalRequest.objects.get(id=asked["approval"]["id"])
    assert request.status == "pending" and request.verdict == ""
    assert not AuditEvent.objects.filter(kind="approval.withdrawn").exists()
    assert _decide(operator, asked["approval"]["id"]).status_code == 200


def test_a_change_that_would_stop_asking_does_not_run_the_call_and_the_card_says_so(
    make_agent: Callable[..., AgentClient], operator: httpx.Client
) -> None:
    client = make_agent("standard", autonomy="locked")
    asked = _asked(client, "test_echo", {"text": "asked while locked"})
    _set(client.agent, _admin(), autonomy="full")

    request = ApprovalRequest.objects.get(id=asked["approval"]["id"])
    assert request.status == "pending" and request.verdict == "no_ask", request.verdict_reason
    # Not run on that account: nobody decided it.
    assert client.get(asked["id"]).json()["status"] == "pending_approval"
    page = Client()
    page.force_login(person_create(username="no-ask-op", role="operator", password=None))
    inbox = page.get("/approvals/").content.decode()
    row = inbox[inbox.index(f'id="req-{request.id}"') :]
    row = row[: row.index("</article>")]
    assert 'data-verdict-now="no_ask"' in row
    assert "the current policy would no longer ask a person for this call" in row
    assert "it still waits for a person's decision" in row
    listed = operator.get("/api/v1/approvals/", params={"status": "pending"}).json()["results"]
    card = next(r for r in listed if r["id"] == str(request.id))
    assert card["verdict_now"]["verdict"] == "no_ask"

    # Back to locked: the note goes, as the policy asks again. Then a person approves.
    _set(client.agent, _admin(), autonomy="locked")
    request.refresh_from_db()
    assert request.verdict == "" and request.status == "pending"
    assert 'data-verdict-now="no_ask"' not in page.get("/approvals/").content.decode()
    assert _decide(operator, asked["approval"]["id"]).status_code == 200


def test_a_change_whose_redecision_never_ran_cannot_be_approved_past(
    make_agent: Callable[..., AgentClient], operator: httpx.Client
) -> None:
    client = make_agent("standard", autonomy="locked")
    doomed = _asked(client, "test_echo", {"text": "x"})
    kept = _asked(client, "test_bad_output", {"text": "y"})
    # Written behind the services' back: no re-decision ran.
    AgentPermissions.objects.update_or_create(
        agent=client.agent, defaults={"denied": ["test_echo"]}
    )
    assert ApprovalRequest.objects.get(id=doomed["approval"]["id"]).status == "pending"

    refused = _decide(operator, doomed["approval"]["id"])
    assert refused.status_code == 409, refused.text
    assert "denied list" in refused.json()["error"]["message"]
    answer = client.get(doomed["id"]).json()
    assert answer["status"] == "denied" and answer["error"]["code"] == "no_longer_permitted"
    # Control: the other call is still permitted and is approved.
    assert _decide(operator, kept["approval"]["id"]).status_code == 200


def test_the_open_inbox_marks_a_withdrawn_request_live(
    make_agent: Callable[..., AgentClient], daphne_server: str
) -> None:
    client = make_agent("standard", autonomy="locked")
    doomed = _asked(client, "shell_command", {"argv": LISTED})
    request_id = doomed["approval"]["id"]
    cookie = session_cookie(person_create(username="live-op", role="operator", password=PASSWORD))
    admin = _admin()

    def lower() -> None:
        try:
            _set(client.agent, admin, access_level="restricted")
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
            # Control: the request is in the inbox as pending before the change.
            assert f'data-request="{request_id}" data-status="pending"' in first
            await asyncio.to_thread(lower)
            for _ in range(10):  # bounded: the settled row comes within a few frames
                frame = str(await asyncio.wait_for(socket.recv(), timeout=15))
                if f'data-request="{request_id}"' in frame:
                    return frame
            raise AssertionError("the withdrawn request never reached the inbox")

    frame = run_fresh(watch)
    assert 'data-status="denied"' in frame, frame
    assert "withdrawn: the current policy refuses it" in frame, frame
