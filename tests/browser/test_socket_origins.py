"""The approvals socket in Chromium: a page of another port on the same host carries
the operator's cookie (cookies ignore ports), and the console refuses its socket; the
same script on the console's own page receives the inbox (the control)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.browser, pytest.mark.integration]
PASSWORD = "pw-socket-origins-1"

# Opens the console's socket and notes what happens; `window.socketSaid` when done.
PROBE = """
(url) => new Promise((resolve) => {
  const said = {opened: false, messages: 0, closed: null};
  const socket = new WebSocket(url);
  socket.onopen = () => { said.opened = true; };
  socket.onmessage = () => { said.messages += 1; if (said.messages >= 1) socket.close(); };
  socket.onclose = (event) => { said.closed = event.code; resolve(said); };
  setTimeout(() => { try { socket.close(); } catch (e) {} resolve(said); }, 15000);
})
"""
PAGE = b"<!doctype html><html><head><title>elsewhere</title></head><body>another site</body></html>"


@pytest.mark.django_db(transaction=True)
def test_a_page_on_another_port_cannot_read_the_inbox(daphne_server: str, page: Any) -> None:
    username = f"op-{uuid.uuid4().hex[:6]}"
    person_create(username=username, role="operator", password=PASSWORD)
    page.goto(daphne_server + "/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(daphne_server + "/")
    socket_url = daphne_server.replace("http://", "ws://") + "/ws/approvals/"

    with LoopbackHttpServer() as elsewhere:
        elsewhere.route("/", Reply(200, {"Content-Type": "text/html"}, PAGE))
        page.goto(elsewhere.url("/"))
        assert page.title() == "elsewhere"
        refused = page.evaluate(PROBE, socket_url)
    assert refused["messages"] == 0, refused
    assert not refused["opened"], refused

    # Control: the console's own page, the same script, the same browser session.
    page.goto(daphne_server + "/approvals/")
    accepted = page.evaluate(PROBE, socket_url)
    assert accepted["opened"] and accepted["messages"] >= 1, accepted
