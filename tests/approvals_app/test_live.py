"""Rows rendered once by the publisher, and the inboxes that render their own instead."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
import websockets
from django.db import connection
from django.utils import timezone
from websockets.typing import Origin

from approvals_app.live import shared_row, shared_row_fits
from approvals_app.models import ApprovalRequest
from approvals_app.selectors.requests import approval_request
from common.testing import run_fresh
from tests.approvals_app.test_consumers import session_cookie, ws_url


def new_request(submit: Callable[..., Any], agent: Any) -> ApprovalRequest:
    request = approval_request(ApprovalRequest.objects.get(invocation=submit(agent)).id)
    assert request is not None
    return request


@pytest.mark.django_db
def test_the_shared_row_has_the_buttons_and_names_who_sees_it_otherwise(
    make_agent_row: Callable[..., Any], make_person: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    ownerless = shared_row(new_request(submit, make_agent_row()), "new")
    assert ownerless["html"].strip().startswith('<div hx-swap-oob="beforeend:#risk-low">')
    assert 'class="approve"' in ownerless["html"] and "barred" not in ownerless["html"]
    assert ownerless["owner_id"] is None and ownerless["admins_differ"] is False

    owner, other, admin = make_person("operator"), make_person("operator"), make_person("admin")
    request = new_request(submit, make_agent_row(owner=owner))
    owned = shared_row(request, "new")
    assert owned["owner_id"] == owner.pk
    assert not shared_row_fits(owned, owner, False)
    assert shared_row_fits(owned, other, False) and shared_row_fits(owned, admin, True)

    request.escalated_at = timezone.now()
    escalated = shared_row(request, "updated")
    assert 'hx-swap-oob="true"' in escalated["html"] and "escalated" not in escalated["html"]
    assert escalated["admins_differ"] and not shared_row_fits(escalated, admin, True)
    assert shared_row_fits(escalated, other, False)


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_owner_gets_its_own_row_and_other_operators_the_shared_one(
    daphne_server: str,
    make_agent_row: Callable[..., Any],
    make_person: Callable[..., Any],
    submit: Callable[..., Any],
) -> None:
    owner, other = make_person("operator"), make_person("operator")
    agent = make_agent_row(owner=owner)
    cookies = [session_cookie(owner), session_cookie(other)]

    def call() -> Any:
        try:
            return submit(agent)
        finally:
            connection.close()

    async def scenario() -> list[str]:
        sockets = [
            await websockets.connect(
                ws_url(daphne_server), origin=Origin(daphne_server),
                additional_headers={"Cookie": cookie}, open_timeout=10,
            )
            for cookie in cookies
        ]  # fmt: skip
        try:
            for socket in sockets:
                await asyncio.wait_for(socket.recv(), timeout=10)  # the resync
            box: dict[str, Any] = {}
            thread = threading.Thread(target=lambda: box.update(invocation=call()))
            thread.start()
            await asyncio.to_thread(thread.join, 30)
            frames = []
            for socket in sockets:
                while True:
                    frame = str(await asyncio.wait_for(socket.recv(), timeout=10))
                    if "beforeend:#risk-" in frame:
                        frames.append(frame)
                        break
            return frames
        finally:
            for socket in sockets:
                await socket.close()

    owner_frame, other_frame = run_fresh(scenario)
    assert "another operator decides its calls" in owner_frame
    assert 'class="approve"' not in owner_frame
    assert 'class="approve"' in other_frame and "barred" not in other_frame
    assert ">1</span>" in owner_frame and ">1</span>" in other_frame


@pytest.mark.integration
@pytest.mark.django_db
def test_a_change_is_published_with_its_row_even_from_a_thread_running_an_event_loop(
    make_agent_row: Callable[..., Any], submit: Callable[..., Any]
) -> None:
    from channels.layers import get_channel_layer

    from approvals_app.events import publish_approval_change
    from common.inbox import OPERATORS_GROUP

    request = new_request(submit, make_agent_row())
    layer = get_channel_layer()
    assert layer is not None

    async def scenario() -> dict[str, Any]:
        channel = await layer.new_channel()
        await layer.group_add(OPERATORS_GROUP, channel)
        try:
            publish_approval_change(request.id, "new", request=request)  # blocks this loop briefly
            return dict(await asyncio.wait_for(layer.receive(channel), timeout=10))
        finally:
            await layer.group_discard(OPERATORS_GROUP, channel)

    message = run_fresh(scenario)
    assert (message["type"], message["id"], message["kind"]) == (
        "approval.changed",
        str(request.id),
        "approval",
    )
    assert f'id="req-{request.id}"' in message["html"] and message["owner_id"] is None


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_decision_on_many_reaches_the_inboxes_in_a_few_messages_each_change_once(
    make_agent_row: Callable[..., Any], make_person: Callable[..., Any]
) -> None:
    from channels.layers import get_channel_layer

    from approvals_app.events import BATCH_ROWS
    from approvals_app.services import approvals_decide_each
    from common.inbox import OPERATORS_GROUP
    from tests.support.pending import pending_like, submitted

    first = submitted(make_agent_row(), "write_file", {"path": "q/0.txt", "content": "x"})
    ids = [str(first.id), *pending_like(first, 149, lambda n: {"path": f"q/{n + 1}.txt"})]
    missing = "00000000-0000-4000-8000-00000000dead"  # refused: publishes nothing
    operator = make_person("operator")
    layer = get_channel_layer()
    assert layer is not None

    def decide() -> Any:
        try:
            return approvals_decide_each(
                requests=[*ids, missing], person=operator, decision="deny", reason="flood"
            )
        finally:
            connection.close()

    async def scenario() -> list[dict[str, Any]]:
        channel = await layer.new_channel()
        await layer.group_add(OPERATORS_GROUP, channel)
        try:
            await asyncio.to_thread(decide)
            found: list[dict[str, Any]] = []
            while sum(len(m["changes"]) for m in found) < len(ids):
                message = dict(await asyncio.wait_for(layer.receive(channel), timeout=10))
                if message["type"] == "approvals.changed":
                    found.append(message)
            return found
        finally:
            await layer.group_discard(OPERATORS_GROUP, channel)

    messages = run_fresh(scenario)
    assert [len(m["changes"]) for m in messages] == [BATCH_ROWS, len(ids) - BATCH_ROWS]
    changes = [c for m in messages for c in m["changes"]]
    assert sorted(c["id"] for c in changes) == sorted(ids)  # each once, the refused one not
    assert all(c["change"] == "settled" and "denied by" in c["html"] for c in changes)
