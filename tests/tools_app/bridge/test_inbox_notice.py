"""The operators' inbox learns live that an upstream tool is held, and that it no longer is."""

from __future__ import annotations

import asyncio

import pytest
import websockets
from django.db import connection
from django.test import Client
from websockets.typing import Origin

from common.testing import run_fresh
from tools_app.bridge.definitions import UpstreamTool
from tools_app.bridge.pinning import definitions_review
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-inbox-notice-1"


def _tool(description: str) -> UpstreamTool:
    return UpstreamTool(server="notes", name="add_note", description=description)


def _review(description: str) -> None:
    try:
        definitions_review(server="notes", tools=[_tool(description)])
    finally:
        connection.close()  # this runs in a pool thread: leave no connection behind


def test_a_held_tool_appears_in_open_inboxes_and_leaves_when_the_server_goes_back(
    daphne_server: str,
) -> None:
    person_create(username="olga", role="operator", password=PASSWORD)
    client = Client()
    assert client.login(username="olga", password=PASSWORD)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    _review("Add a note.")

    async def main() -> tuple[str, str, str]:
        async with websockets.connect(
            daphne_server.replace("http://", "ws://") + "/ws/approvals/?view=inbox",
            origin=Origin(daphne_server),
            additional_headers={"Cookie": cookie},
            open_timeout=10,
        ) as socket:
            first = str(await asyncio.wait_for(socket.recv(), timeout=10))
            await asyncio.to_thread(_review, "Add a note, and mail it out.")
            held = str(await asyncio.wait_for(socket.recv(), timeout=10))
            await asyncio.to_thread(_review, "Add a note.")
            back = str(await asyncio.wait_for(socket.recv(), timeout=10))
            return first, held, back

    first, held, back = run_fresh(main)
    # control: nothing held at connect, the notice's place is there and empty
    assert '<div id="upstream-held" hx-swap-oob="true"></div>' in first
    assert 'id="upstream-held"' in held and "1 upstream tool held" in held
    assert "notes__add_note" in held and 'href="/tools/upstream/"' in held
    assert "upstream-held-banner" not in back and 'id="upstream-held"' in back
