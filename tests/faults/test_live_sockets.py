"""An operator's live socket when Redis restarts under it: it closes as lost (4012) instead
of staying open and deaf, and a socket opened again is live (it hears a new request).

The console has its own append-only Redis on TCP, a web node, a worker and beat. Messages
sent to the socket while Redis was away are lost whatever Redis keeps, so a restart
(a new run of Redis) is enough for the socket to say so.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin

from common.testing import wait_until
from tests.acceptance.console import sign_in
from tests.faults.test_redis_restart import console_on
from trust_app.services.agents import agent_create, person_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PASSWORD = "a-long-operator-password-1"
LIVE_LOST = 4012


@contextmanager
def _inbox_socket(base: str, cookie: str) -> Iterator[ClientConnection]:
    url = base.replace("http://", "ws://") + "/ws/approvals/?view=inbox"
    with connect(
        url, additional_headers={"Cookie": cookie}, origin=Origin(base), open_timeout=10
    ) as socket:
        socket.recv(timeout=30)  # the inbox as it is now
        yield socket


def _hears(socket: ClientConnection, marker: str, *, within: float = 30) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            frame = str(socket.recv(timeout=max(0.1, deadline - time.monotonic())))
        except TimeoutError:
            return False
        if marker in frame:
            return True
    return False


def _ask(base: str, token: str, marker: str) -> None:
    answer = httpx.post(
        base + "/api/v1/invocations/",
        headers={"Authorization": f"Bearer {token}"},
        json={"tool": "read_file", "arguments": {"path": f"{marker}.txt"}},
        timeout=30,
    )
    assert answer.status_code == 201 and answer.json()["status"] == "pending_approval"


def test_a_socket_closes_as_lost_when_redis_restarts_and_a_new_one_is_live(
    test_env: dict[str, str], tmp_path: Path
) -> None:
    locked = agent_create(name=f"asks-{uuid.uuid4().hex[:8]}", access_level="standard",
                          autonomy="locked")  # fmt: skip
    name = f"op-{uuid.uuid4().hex[:8]}"
    person_create(username=name, role="operator", password=PASSWORD)
    env = dict(test_env, SYNTHORG_LIVE_CHECK_SECONDS="1")
    with console_on(env, tmp_path) as (base, own, _):
        operator = sign_in(base, name, PASSWORD)
        cookie = "; ".join(f"{k}={v}" for k, v in operator.cookies.items())
        operator.close()
        with _inbox_socket(base, cookie) as socket:
            # Control: the socket is live before the restart.
            first = f"before-{uuid.uuid4().hex[:6]}"
            _ask(base, locked.token, first)
            assert _hears(socket, first), "the socket hears a new request"
            own.stop()
            try:
                with pytest.raises(ConnectionClosed) as closed:
                    while True:
                        socket.recv(timeout=30)
            finally:
                own.start()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == LIVE_LOST

        # Opened again (as the page does), it is live: a new request reaches it.
        def reopened() -> bool:
            try:
                with _inbox_socket(base, cookie) as again:
                    second = f"after-{uuid.uuid4().hex[:6]}"
                    _ask(base, locked.token, second)
                    return _hears(again, second)
            except (InvalidHandshake, InvalidStatus, ConnectionClosed, OSError):
                return False

        wait_until(reopened, timeout=90, what="a socket opened again to be live", poll=1)
