"""The operators' socket over a real daphne: who may connect, what it sends."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

import pytest
import websockets
from django.test import Client
from websockets.typing import Origin

from common.testing import in_fresh_thread
from tests.approvals_app.conftest import PASSWORD

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/ws/approvals/?view=inbox"


async def handshake(base: str, headers: dict[str, str]) -> tuple[int | None, str]:
    """Open the socket; the refused status, or None and the first frame."""
    try:
        async with websockets.connect(
            ws_url(base),
            origin=Origin(base),
            additional_headers=headers,
            open_timeout=10,
        ) as socket:
            return None, str(await asyncio.wait_for(socket.recv(), timeout=10))
    except websockets.InvalidStatus as exc:
        return exc.response.status_code, ""


def session_cookie(person: Any) -> str:
    client = Client()
    assert client.login(username=person.username, password=PASSWORD)
    return f"sessionid={client.cookies['sessionid'].value}"


def test_anonymous_agent_and_auditor_sockets_are_refused(
    daphne_server: str,
    make_person: Callable[..., Any],
    make_agent_row: Callable[..., Any],
) -> None:
    from trust_app.services.agents import agent_create

    agent_token = agent_create(name="socket-agent", access_level="elevated").token
    auditor = session_cookie(make_person("auditor"))
    for headers in ({}, {"Authorization": f"Bearer {agent_token}"}, {"Cookie": auditor}):
        status, _ = in_fresh_thread(
            functools.partial(asyncio.run, handshake(daphne_server, headers))
        )
        assert status == 403, headers


def test_an_operator_gets_the_current_inbox_on_connect(
    daphne_server: str,
    make_person: Callable[..., Any],
    make_agent_row: Callable[..., Any],
    submit: Callable[..., Any],
) -> None:
    invocation = submit(make_agent_row())
    cookie = session_cookie(make_person("operator"))
    status, frame = in_fresh_thread(
        lambda: asyncio.run(handshake(daphne_server, {"Cookie": cookie}))
    )
    assert status is None
    assert 'id="pending-count"' in frame and ">1</span>" in frame
    assert str(invocation.approval.id) in frame and 'id="approval-inbox"' in frame
