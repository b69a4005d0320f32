"""The exchange's deadline is wall-clock, whatever phase trickles; malformed redirects refused.

Servers of the test's own on loopback send one byte a second (a bounded number of
them). Each attack is judged by what the server saw: the client hung up long
before the server was done sending. Positive controls: the same server, fast.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from common.testing import wait_until
from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from tests.tools_app.net.test_fetch import loopback_guard
from tools_app.net import EgressDeadlineError, EgressUrlInvalidError, FetchLimits, fetch

TRICKLE_BYTES = 30  # one a second: the server would be busy for 30 s
TIMEOUT = 2.0


class Trickle:
    """A body of ``TRICKLE_BYTES`` bytes, one a second; counts what it handed out."""

    def __init__(self) -> None:
        self.sent = 0

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(TRICKLE_BYTES):
            self.sent += 1
            yield b"x"
            time.sleep(1)


class SlowHeaderServer:
    """Answers one connection with a status line, then header bytes one a second."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = int(self.sock.getsockname()[1])
        self.sent = 0
        self.hung_up = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        self.sock.settimeout(10)
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(10)
            try:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                for _ in range(TRICKLE_BYTES):
                    conn.sendall(b"X")
                    self.sent += 1
                    time.sleep(1)
            except OSError:
                self.hung_up.set()

    def __enter__(self) -> SlowHeaderServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
        self.thread.join(timeout=TRICKLE_BYTES + 5)


def test_a_body_fed_a_byte_a_second_ends_at_the_deadline(web: LoopbackHttpServer) -> None:
    trickle = Trickle()
    web.route("/slow", Reply(200, {"Content-Type": "text/plain"}, trickle))
    with pytest.raises(EgressDeadlineError) as caught:
        fetch(
            loopback_guard(),
            method="GET",
            url=web.url("/slow"),
            limits=FetchLimits(timeout_seconds=TIMEOUT),
        )
    assert "within the 2 s time limit" in caught.value.message
    # The client hung up mid-body: the server noticed before it had sent everything.
    wait_until(web.stream_stopped_early.is_set, timeout=15, what="the server to see the hang-up")
    assert trickle.sent < TRICKLE_BYTES


def test_a_fast_body_from_the_same_server_is_read_in_full(web: LoopbackHttpServer) -> None:
    web.route("/fast", Reply(200, {"Content-Type": "text/plain"}, iter([b"x"] * TRICKLE_BYTES)))
    response = fetch(
        loopback_guard(),
        method="GET",
        url=web.url("/fast"),
        limits=FetchLimits(timeout_seconds=TIMEOUT),
    )
    assert response.body == b"x" * TRICKLE_BYTES


def test_headers_fed_a_byte_a_second_end_at_the_deadline() -> None:
    with SlowHeaderServer() as server:
        with pytest.raises(EgressDeadlineError):
            fetch(
                loopback_guard(),
                method="GET",
                url=f"http://127.0.0.1:{server.port}/",
                limits=FetchLimits(timeout_seconds=TIMEOUT),
            )
        wait_until(server.hung_up.is_set, timeout=15, what="the server to see the hang-up")
        assert server.sent < TRICKLE_BYTES


@pytest.mark.parametrize(
    "location",
    [
        "http://[::1",
        "http://127.0.0.1:99999/x",
        "http://127.0.0.1:8x/",
        "http://exa mple.org/",
        "http://\x7f/",
        "http://%zz/",
        "http://a@@/",
        "ftp://127.0.0.1/",
    ],
)
def test_a_malformed_redirect_is_refused_with_a_reason(
    web: LoopbackHttpServer, location: str
) -> None:
    web.route("/bad", Reply(302, {"Location": location}))
    with pytest.raises(EgressUrlInvalidError) as caught:
        fetch(loopback_guard(), method="GET", url=web.url("/bad"))
    assert "redirect" in caught.value.reason and "not followed" in caught.value.reason
    assert web.count("/bad") == 1


def test_a_well_formed_redirect_from_the_same_server_is_followed(web: LoopbackHttpServer) -> None:
    web.route("/good", Reply(302, {"Location": "/target"}))
    web.route("/target", Reply(200, body=b"arrived"))
    response = fetch(loopback_guard(), method="GET", url=web.url("/good"))
    assert response.body == b"arrived" and response.redirects == (web.url("/target"),)
