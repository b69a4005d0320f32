"""Attacks on sealed secrets at the egress proxy: a program holding only the placeholder
tries to make the value reach something it can read.

Every attack is driven through a real proxy on a unix socket against real loopback
servers; ``QuirkyServer`` is a small keep-alive HTTP/1.1 server with the habits real
servers have (it echoes bodies, answers TRACE with the request, answers some routes
without reading the body, redirects with the query). Each attack asserts that the
value is in no byte the client received (and, where the server echoes, in no body the
server read), and a control beside it shows the sealed host still gets the value.
"""

from __future__ import annotations

import base64
import gzip
import re
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO
from urllib.parse import parse_qs, urlsplit

import pytest

from common.vocabulary.sealing import parse_injection, parse_sealed_hosts
from tests.acceptance.certificates import self_signed
from tests.tools_app.egress.servers import (
    connect,
    read_all,
    read_head,
    running_proxy,
    socks_connect,
)
from tests.tools_app.net.servers import LoopbackHttpServer, RecordedRequest, Reply, StaticResolver
from tools_app.egress import EgressProxy, NetworkGrant, ProxyLimits
from tools_app.egress.authority import EgressAuthority, upstream_context
from tools_app.egress.seal import Seal, ValueMask

VALUE = "sk-sealed-" + "5e1f0d" * 6
PLACEHOLDER = "${secret:API_TOKEN}"
# Every encoding a leak could take on the way back to the client.
LEAKS = (
    VALUE.encode(),
    base64.b64encode(f"Bearer {VALUE}".encode()),
    base64.b64encode(VALUE.encode()),
    base64.b64encode(f"deploy:{VALUE}".encode()),
)
MAX_REQUESTS_PER_CONNECTION = 16
MAX_BODY = 64 * 1024
# Idle connections end quickly so a test reads "everything" by reading until close;
# generous next to a loopback exchange, short next to the test's own timeout.
LIMITS = ProxyLimits(idle_timeout_seconds=5)


def _leaks(data: bytes) -> bool:
    return any(form in data for form in LEAKS)


# --- a server with real servers' habits -------------------------------------------------


@dataclass
class Seen:
    """One request as QuirkyServer read it."""

    method: str
    target: str
    head: bytes
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=list)

    def header(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]


class QuirkyServer:
    """Keep-alive HTTP/1.1 on 127.0.0.1 with routes that echo:

    ``/echo-body`` answers with the body it read; ``/ignore-body`` answers without
    reading the body (the connection stays open: the body is read as the next request);
    ``/refuse-expect`` answers 417 to ``Expect: 100-continue`` without reading the body;
    ``/slash`` redirects to ``/slash/`` keeping the query; ``/away`` redirects to
    ``redirect_to``; ``/head`` announces 64 bytes and sends none for HEAD; ``/no-content``
    answers 204; ``/not-modified`` 304; ``/close-then-more`` answers with
    ``Connection: close`` and then sends a second, unasked-for answer. TRACE answers
    with the request head (as servers with TRACE enabled do).
    """

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.redirect_to = ""
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.1)
        self.port = int(self._sock.getsockname()[1])
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> QuirkyServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=5)
        self._sock.close()

    @property
    def authority(self) -> str:
        return f"127.0.0.1:{self.port}"

    def received_value(self) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if _leaks(s.head)]

    def _serve(self) -> None:
        while not self._done.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(30)
        with conn, conn.makefile("rb") as stream:
            try:
                for _ in range(MAX_REQUESTS_PER_CONNECTION):
                    if not self._request(conn, stream):
                        return
            except (OSError, ValueError):
                return

    def _request(self, conn: socket.socket, stream: BinaryIO) -> bool:
        readline, read = stream.readline, stream.read
        line = readline(8192)
        while line in (b"\r\n", b"\n"):
            line = readline(8192)
        if not line:
            return False
        head = line
        headers: list[tuple[str, str]] = []
        while True:
            header = readline(8192)
            head += header
            if header in (b"\r\n", b"\n", b""):
                break
            name, _, value = header.decode("latin-1").partition(":")
            headers.append((name.strip(), value.strip()))
        words = line.decode("latin-1").split()
        if len(words) != 3:
            conn.sendall(_answer(400, b"bad request line", close=True))
            with self._lock:
                self.seen.append(Seen("?", "?", head, b"", headers))
            return False
        method, target, _ = words
        path = target.split("?", 1)[0]
        fields = {k.lower(): v for k, v in headers}
        if method == "TRACE":
            with self._lock:
                self.seen.append(Seen(method, target, head, b"", headers))
            conn.sendall(_answer(200, head, content_type="message/http"))
            return True
        if path == "/refuse-expect" and fields.get("expect", "").lower() == "100-continue":
            with self._lock:
                self.seen.append(Seen(method, target, head, b"", headers))
            conn.sendall(_answer(417, b"no"))
            return True
        if fields.get("expect", "").lower() == "100-continue":
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = b""
        if path != "/ignore-body":
            if "chunked" in fields.get("transfer-encoding", "").lower():
                body = _read_chunked(readline, read)
            elif fields.get("content-length", "").isdigit():
                body = read(min(int(fields["content-length"]), MAX_BODY))
        with self._lock:
            self.seen.append(Seen(method, target, head, body, headers))
        query = target.partition("?")[2]
        if path == "/echo-body":
            conn.sendall(_answer(200, body))
        elif path == "/slash":
            conn.sendall(_answer(301, b"", location=f"/slash/?{query}"))
        elif path == "/away":
            conn.sendall(_answer(302, b"", location=self.redirect_to))
        elif path == "/head":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 64\r\n\r\n")
            if method != "HEAD":
                conn.sendall(b"h" * 64)
        elif path == "/no-content":
            conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
        elif path == "/not-modified":
            conn.sendall(b'HTTP/1.1 304 Not Modified\r\nETag: "x"\r\n\r\n')
        elif path == "/reflect":
            # The request head back, chunked in small pieces (the value split across).
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for at in range(0, len(head), 7):
                piece = head[at : at + 7]
                conn.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            conn.sendall(b"0\r\n\r\n")
        elif path == "/reflect-gzip":
            compress = "gzip" in fields.get("accept-encoding", "")
            reflected = gzip.compress(head) if compress else head
            encoding = "Content-Encoding: gzip\r\n" if compress else ""
            conn.sendall(
                f"HTTP/1.1 200 OK\r\n{encoding}Content-Length: {len(reflected)}\r\n\r\n".encode()
                + reflected
            )
        elif path == "/close-then-more":
            conn.sendall(_answer(200, b"first", close=True) + _answer(200, b"unasked"))
            return False
        else:
            conn.sendall(_answer(200, b"seen " + target.encode()))
        return True


def _read_chunked(readline: Callable[[int], bytes], read: Callable[[int], bytes]) -> bytes:
    body = b""
    while len(body) <= MAX_BODY:
        size = int(readline(8192).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while readline(8192) not in (b"\r\n", b"\n", b""):
                pass
            return body
        body += read(min(size, MAX_BODY))
        readline(8192)
    return body


def _answer(
    status: int,
    body: bytes,
    *,
    close: bool = False,
    location: str = "",
    content_type: str = "text/plain",
) -> bytes:
    head = f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    if location:
        head += f"Location: {location}\r\n"
    if close:
        head += "Connection: close\r\n"
    return head.encode() + b"\r\n" + body


# --- the proxy and the client -----------------------------------------------------------


def _seal(host: str, inject: str = "bearer", value: str = VALUE) -> Seal:
    return Seal(
        secret="API_TOKEN",
        value=value,
        hosts=parse_sealed_hosts([host]),
        injection=parse_injection(inject),
    )


def _grant(*entries: str) -> NetworkGrant:
    return NetworkGrant(mode="allowlist_only", allowed_hosts=entries)


def _proxy(
    tmp_path: Path,
    server_port: int,
    *,
    inject: str = "bearer",
    value: str = VALUE,
    others: tuple[int, ...] = (),
    authority: EgressAuthority | None = None,
    upstream_tls: ssl.SSLContext | None = None,
) -> AbstractContextManager[EgressProxy]:
    """A proxy allowing 127.0.0.1:``server_port`` (and ``others``), the secret sealed for
    the first only."""
    entries = [f"127.0.0.1:{port}" for port in (server_port, *others)]
    return running_proxy(
        tmp_path,
        _grant(*entries),
        limits=LIMITS,
        seals=(_seal(f"127.0.0.1:{server_port}", inject, value),),
        authority=authority,
        upstream_tls=upstream_tls,
    )


def _get(path: str, host: str, *, extra: str = "", method: str = "GET") -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {PLACEHOLDER}\r\n"
        f"{extra}\r\n"
    ).encode()


def _tunnel(client: socket.socket, port: int) -> None:
    client.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    assert read_head(client).startswith(b"HTTP/1.1 200")


def _exchange(proxy: EgressProxy, port: int, data: bytes) -> bytes:
    """``data`` through a CONNECT tunnel to 127.0.0.1:``port``, then everything the client
    receives until the proxy closes (the client half-closes: nothing more comes)."""
    with connect(proxy) as client:
        _tunnel(client, port)
        client.sendall(data)
        client.shutdown(socket.SHUT_WR)
        return read_all(client)


def _statuses(answer: bytes) -> list[int]:
    return [int(status) for status in re.findall(rb"HTTP/1\.1 (\d{3})[ \r]", answer)]


# --- the Host the server reads ----------------------------------------------------------

# A Host header the proxy either refuses (nothing sent) or replaces by the sealed
# destination's own: never passed on as written when it names another site.
HOST_VARIANTS = [
    "evil.example.invalid",
    "{h}@evil.example.invalid",
    "evil.example.invalid@{h}",
    "{h}.evil.example.invalid",
    "127.0.0.1",
    "127.0.0.1:80",
    "127.0.0.1.:{p}",
    "127.0.0.1:0{p}",
    "127.0.0.1:+{p}",
    "127.0.0.1:{p}:{p}",
    "127.0.0.1:{p}, evil.example.invalid",
    "127.0.0.1:{p}/evil.example.invalid",
    "127.0.0.1:{p}#evil.example.invalid",
    "127.0.0.1:{p}?evil.example.invalid",
    "127.1:{p}",
    "2130706433:{p}",
    "[::ffff:127.0.0.1]:{p}",
    "[::1]:{p}",
    "127.0.0.1:{p}\\@evil.example.invalid",
    "127.0.0.1%2e:{p}",
    "EVIL.example.invalid:{p}",
]


@pytest.mark.parametrize("variant", HOST_VARIANTS)
def test_a_host_header_variant_never_reaches_the_server_as_written(
    tmp_path: Path, variant: str
) -> None:
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        host = variant.format(h=server.authority, p=server.port)
        answer = _exchange(proxy, server.port, _get("/plain", host))
        control = _exchange(proxy, server.port, _get("/plain", server.authority))
    assert not _leaks(answer)
    assert _statuses(control) == [200]
    # Whatever the variant did, every request the server got names the sealed host
    # exactly, and the control got the value.
    assert {tuple(s.header("Host")) for s in server.seen} == {(server.authority,)}
    assert len(server.received_value()) == len(server.seen) >= 1
    if _statuses(answer) != [200]:
        assert len(server.seen) == 1  # refused: the control only


@pytest.mark.parametrize(
    "head",
    [
        # Two Host headers, and a Host folded over two lines (obs-fold).
        "GET /plain HTTP/1.1\r\nHost: {h}\r\nHost: evil.example.invalid\r\n",
        "GET /plain HTTP/1.1\r\nHost: evil.example.invalid\r\nhost: {h}\r\n",
        "GET /plain HTTP/1.1\r\nHost: {h}\r\n evil.example.invalid\r\n",
        "GET /plain HTTP/1.1\r\nHost : {h}\r\n",
        "GET /plain HTTP/1.1\r\nHost:\t{h}\t\r\nX: \r\n",
        # Absolute-form targets with userinfo naming another host, or the sealed one.
        "GET http://{h}@evil.example.invalid/plain HTTP/1.1\r\nHost: {h}\r\n",
        "GET http://evil.example.invalid/plain HTTP/1.1\r\nHost: {h}\r\n",
        "GET https://evil.example.invalid:{p}/plain HTTP/1.1\r\nHost: {h}\r\n",
        "GET http://evil.example.invalid@{h}/plain HTTP/1.1\r\nHost: {h}\r\n",
        "GET //evil.example.invalid/plain HTTP/1.1\r\nHost: {h}\r\n",
        "GET * HTTP/1.1\r\nHost: {h}\r\n",
        "GET /plain HTTP/1.0\r\n",
    ],
)
def test_a_request_line_or_host_trick_sends_nothing_elsewhere(tmp_path: Path, head: str) -> None:
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        raw = head.format(h=server.authority, p=server.port)
        raw += f"Authorization: Bearer {PLACEHOLDER}\r\n\r\n"
        answer = _exchange(proxy, server.port, raw.encode())
        control = _exchange(proxy, server.port, _get("/plain", server.authority))
    assert not _leaks(answer)
    assert _statuses(control) == [200]
    assert {tuple(s.header("Host")) for s in server.seen} == {(server.authority,)}
    assert len(server.received_value()) == len(server.seen) >= 1


def test_the_plain_proxy_form_with_userinfo_naming_another_host_is_refused(
    tmp_path: Path,
) -> None:
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        answers = []
        for url in (
            f"http://{server.authority}@evil.example.invalid/plain",
            f"http://{server.authority}/plain",  # control
        ):
            with connect(proxy) as client:
                client.sendall(_get(url, server.authority))
                client.shutdown(socket.SHUT_WR)
                answers.append(read_all(client))
    assert not any(_leaks(a) for a in answers)
    assert _statuses(answers[1]) == [200]
    assert _statuses(answers[0]) != [200]
    assert len(server.received_value()) == len(server.seen) == 1


# --- pipelining, smuggling, bodies --------------------------------------------------------


def test_a_pipelined_second_request_for_another_host_is_refused_and_the_first_sealed(
    tmp_path: Path,
) -> None:
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        answer = _exchange(
            proxy,
            server.port,
            _get("/plain", server.authority)
            + _get("/plain", "evil.example.invalid")
            + _get("/after", server.authority),
        )
    assert _statuses(answer) == [200, 421]
    assert not _leaks(answer)
    assert [s.target for s in server.seen] == ["/plain"]
    assert len(server.received_value()) == 1


def test_a_body_is_never_where_the_value_goes(tmp_path: Path) -> None:
    """The program writes the placeholder (and a whole Authorization line) into a body
    the server echoes: it comes back as written, while the head carries the value."""
    body = f"Authorization: Bearer {PLACEHOLDER}\r\n{PLACEHOLDER}".encode()
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        answer = _exchange(
            proxy,
            server.port,
            _get("/echo-body", server.authority, extra=f"Content-Length: {len(body)}\r\n",
                 method="POST") + body,
        )  # fmt: skip
    assert answer.endswith(body) and not _leaks(answer)
    (seen,) = server.seen
    assert seen.body == body and seen.header("Authorization") == [f"Bearer {VALUE}"]


def test_the_placeholder_in_other_headers_is_passed_as_written(tmp_path: Path) -> None:
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        _exchange(
            proxy, server.port, _get("/plain", server.authority, extra=f"X-Echo: {PLACEHOLDER}\r\n")
        )
    (seen,) = server.seen
    assert seen.header("X-Echo") == [PLACEHOLDER]
    assert seen.header("Authorization") == [f"Bearer {VALUE}"]


def _smuggled(authority: str) -> bytes:
    # A request head in a body, asking the server to read what follows (the next head,
    # with the value) as its body and echo it.
    return (f"POST /echo-body HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 60\r\n\r\n").encode()


SMUGGLING = [
    "Transfer-Encoding: chunked, chunked\r\n",
    "Transfer-Encoding: xchunked\r\n",
    "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n",
    "Transfer-Encoding:\tchunked\r\n",
    "Transfer-Encoding: chunked \r\n",
    "Transfer-Encoding : chunked\r\n",
    "Transfer-Encoding: identity\r\n",
    "Content-Length: +{n}\r\n",
    "Content-Length: {n}\r\nContent-Length: 0\r\n",
    "Content-Length: {n}, 0\r\n",
    "Content-Length: 0\r\nTransfer-Encoding: chunked\r\n",
    "Content-Length: {n}\r\nTransfer-Encoding: chunked\r\n",
]


@pytest.mark.parametrize("framing", SMUGGLING)
def test_ambiguous_framing_never_makes_the_value_a_body_the_server_echoes(
    tmp_path: Path, framing: str
) -> None:
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        smuggled = _smuggled(server.authority)
        chunked = f"{len(smuggled):x}\r\n".encode() + smuggled + b"\r\n0\r\n\r\n"
        body = chunked if "chunked" in framing and "xchunked" not in framing else smuggled
        head = _get(
            "/echo-body", server.authority, method="POST", extra=framing.format(n=len(body))
        )
        answer = _exchange(proxy, server.port, head + body + _get("/plain", server.authority))
    assert not _leaks(answer)
    assert not any(_leaks(s.body) for s in server.seen)
    assert server.received_value() == [s for s in server.seen if s.target != "?"]


@pytest.mark.parametrize(
    "body",
    [
        # Chunk extensions, bare LF line ends, a chunk size larger than anything sent.
        b"{x};ext=1\r\n{s}\r\n0\r\n\r\n",
        b"{x}\n{s}\n0\n\n",
        b"{x} \r\n{s}\r\n0\r\n\r\n",
        b"0{x}\r\n{s}\r\n0\r\n\r\n",
        b"ffffffffffffffffffff\r\n{s}\r\n0\r\n\r\n",
        b"{x}\r\n{s}\r\n0\r\nContent-Length: 60\r\nHost: evil.example.invalid\r\n\r\n",
    ],
)
def test_odd_chunking_is_reframed_or_refused_never_read_two_ways(
    tmp_path: Path, body: bytes
) -> None:
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        smuggled = _smuggled(server.authority)
        data = body.replace(b"{x}", f"{len(smuggled):x}".encode()).replace(b"{s}", smuggled)
        head = _get("/echo-body", server.authority, method="POST",
                    extra="Transfer-Encoding: chunked\r\n")  # fmt: skip
        answer = _exchange(proxy, server.port, head + data + _get("/plain", server.authority))
    assert not _leaks(answer)
    assert not any(_leaks(s.body) for s in server.seen)
    # Whatever the server read as a request carries the value only if the proxy wrote it.
    for seen in server.received_value():
        assert seen.header("Host") == [server.authority]


def test_a_server_that_answers_without_reading_the_body_gets_no_next_request(
    tmp_path: Path,
) -> None:
    """The server answers before reading the body and keeps the connection: it reads the
    body as the next request, whose own body would be the proxy's next head (with the
    value), echoed. A connection whose request had a body ends with its answer."""
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        follow = _get("/plain", server.authority)
        forwarded = (
            f"GET /plain HTTP/1.1\r\nHost: {server.authority}\r\nAuthorization: Bearer {VALUE}\r\n"
        )
        smuggled = (
            f"POST /echo-body HTTP/1.1\r\nHost: {server.authority}\r\n"
            f"Content-Length: {len(forwarded)}\r\n\r\n"
        ).encode()
        first = _get("/ignore-body", server.authority, method="POST",
                     extra=f"Content-Length: {len(smuggled)}\r\n") + smuggled  # fmt: skip
        answer = _exchange(proxy, server.port, first + follow)
        # Control: requests without a body share one connection, each sealed.
        control = _exchange(proxy, server.port, follow + follow)
    assert not _leaks(answer)
    assert _statuses(answer) == [200]
    assert b"connection: close" in answer.lower()
    assert _statuses(control) == [200, 200]
    assert not any(_leaks(s.body) for s in server.seen)


def test_expect_continue_flows_keep_the_value_in_the_head(tmp_path: Path) -> None:
    body = f"payload {PLACEHOLDER}".encode()
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        with connect(proxy) as client:
            _tunnel(client, server.port)
            client.sendall(
                _get("/echo-body", server.authority, method="POST",
                     extra=f"Expect: 100-continue\r\nContent-Length: {len(body)}\r\n")
            )  # fmt: skip
            continued = read_head(client)
            client.sendall(body)
            client.shutdown(socket.SHUT_WR)
            answer = read_all(client)
        # The server refuses the body (417) without reading it; the program sends it
        # anyway, with a smuggled head and a request after it.
        smuggled = (
            f"POST /echo-body HTTP/1.1\r\nHost: {server.authority}\r\nContent-Length: 80\r\n\r\n"
        ).encode()
        refused = _exchange(
            proxy,
            server.port,
            _get("/refuse-expect", server.authority, method="POST",
                 extra=f"Expect: 100-continue\r\nContent-Length: {len(smuggled)}\r\n")
            + smuggled
            + _get("/plain", server.authority),
        )  # fmt: skip
    assert continued.startswith(b"HTTP/1.1 100")
    assert answer.endswith(body) and not _leaks(answer)
    assert not _leaks(refused) and _statuses(refused)[0] == 417
    assert not any(_leaks(s.body) for s in server.seen)
    assert server.seen[0].header("Authorization") == [f"Bearer {VALUE}"]


@pytest.mark.parametrize(
    ("path", "method", "status"),
    [("/head", "HEAD", 200), ("/no-content", "GET", 204), ("/not-modified", "GET", 304)],
)
def test_bodiless_answers_keep_the_connection_in_step(
    tmp_path: Path, path: str, method: str, status: int
) -> None:
    """An answer with no body (HEAD, 204, 304) followed by another request: the second
    answer is the second request's, not bytes the first was taken to announce."""
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        answer = _exchange(
            proxy,
            server.port,
            _get(path, server.authority, method=method) + _get("/second", server.authority),
        )
    assert _statuses(answer) == [status, 200]
    assert answer.endswith(b"seen /second")
    assert len(server.received_value()) == 2


def test_an_answer_that_says_close_and_keeps_sending_ends_the_connection(
    tmp_path: Path,
) -> None:
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        answer = _exchange(
            proxy,
            server.port,
            _get("/close-then-more", server.authority) + _get("/second", server.authority),
        )
    assert _statuses(answer) == [200] and answer.endswith(b"first")
    assert [s.target for s in server.seen] == ["/close-then-more"]


def test_trace_which_echoes_the_request_is_not_sent(tmp_path: Path) -> None:
    with QuirkyServer() as server:
        # Control: the server does echo a TRACE, header and all.
        with socket.create_connection(("127.0.0.1", server.port), timeout=20) as direct:
            direct.sendall(b"TRACE / HTTP/1.1\r\nHost: x\r\nX-Probe: here\r\n\r\n")
            assert b"X-Probe: here" in direct.recv(65536)
        with _proxy(tmp_path, server.port) as proxy:
            answers = [
                _exchange(proxy, server.port, _get("/", server.authority, method=method))
                for method in ("TRACE", "trace", "TRACK")
            ]
            control = _exchange(proxy, server.port, _get("/plain", server.authority))
    assert not any(_leaks(a) for a in answers)
    assert [_statuses(a) for a in answers] == [[405]] * 3
    assert _statuses(control) == [200]
    assert len(server.received_value()) == 1


def test_connect_and_http2_inside_a_sealed_connection_are_refused(tmp_path: Path) -> None:
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        inner = _exchange(
            proxy,
            server.port,
            f"CONNECT evil.example.invalid:443 HTTP/1.1\r\nHost: evil.example.invalid:443\r\n"
            f"Authorization: Bearer {PLACEHOLDER}\r\n\r\n".encode()
            + _get("/plain", server.authority),
        )
        preface = _exchange(
            proxy, server.port, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00"
        )
        control = _exchange(proxy, server.port, _get("/plain", server.authority))
    assert _statuses(inner) == [405]
    assert _statuses(preface) in ([400], [505], [])
    assert not _leaks(inner + preface)
    assert _statuses(control) == [200] and len(server.seen) == 1


# --- redirects and names ------------------------------------------------------------------


def test_a_redirect_to_another_host_is_followed_without_the_value(tmp_path: Path) -> None:
    with QuirkyServer() as sealed, QuirkyServer() as other:
        sealed.redirect_to = f"http://{other.authority}/landing"
        with _proxy(tmp_path, sealed.port, others=(other.port,)) as proxy:
            first = _exchange(proxy, sealed.port, _get("/away", sealed.authority))
            location = next(
                line.split(b": ", 1)[1].decode()
                for line in first.split(b"\r\n")
                if line.lower().startswith(b"location:")
            )
            target = urlsplit(location)
            assert target.port is not None
            followed = _exchange(proxy, target.port, _get(target.path, target.netloc))
    assert not _leaks(first + followed)
    assert other.seen[0].header("Authorization") == [f"Bearer {PLACEHOLDER}"]
    assert sealed.seen[0].header("Authorization") == [f"Bearer {VALUE}"]


def test_a_redirect_that_keeps_the_query_does_not_show_the_value(tmp_path: Path) -> None:
    """With ``query:key`` the server's own redirect (``/slash`` to ``/slash/?...``) would
    hand the value back in its Location: the proxy masks it in what it passes back."""
    with QuirkyServer() as server, _proxy(tmp_path, server.port, inject="query:key") as proxy:
        answer = _exchange(proxy, server.port, _get("/slash?q=1", server.authority))
    (seen,) = server.seen
    assert parse_qs(urlsplit(seen.target).query)["key"] == [VALUE]
    assert _statuses(answer) == [301]
    assert not _leaks(answer)
    assert b"Location: /slash/?q=1&key=" in answer


@pytest.mark.parametrize(
    "query",
    [
        "key=mine",
        "ke%79=mine",
        "%6B%65%79=mine",
        "KEY=mine",
        "a=1;key=mine",
        "key",
        "key=mine&key=mine2",
        "key%00=mine",
    ],
)
def test_a_parameter_the_program_adds_under_the_sealed_name_is_dropped(
    tmp_path: Path, query: str
) -> None:
    with QuirkyServer() as server, _proxy(tmp_path, server.port, inject="query:key") as proxy:
        answer = _exchange(proxy, server.port, _get(f"/plain?{query}&q=1", server.authority))
        control = _exchange(proxy, server.port, _get("/plain?q=1", server.authority))
    assert not _leaks(answer + control)
    sent, checked = (urlsplit(s.target).query for s in server.seen)
    # The server reads the parameter once, and it is the sealed value, however it
    # splits (on & alone, or on ; as well) and whatever case it folds.
    for split in (sent, sent.replace(";", "&")):
        for fold in (str, str.lower):
            pairs = parse_qs(split, keep_blank_values=True).items()
            values = [value for name, values in pairs if fold(name) == "key" for value in values]
            assert values == [VALUE], (query, sent)
    assert parse_qs(sent)["q"] == ["1"] and parse_qs(checked) == {"q": ["1"], "key": [VALUE]}


@pytest.mark.parametrize("inject", ["bearer", "basic:deploy", "header:X-Api-Key", "query:key"])
def test_a_server_reflecting_the_request_hands_back_the_value_masked(
    tmp_path: Path, inject: str
) -> None:
    """A sealed host that echoes its request (headers, target) in pieces of a body: the
    value is masked however the pieces fall, and the body keeps its length."""
    with QuirkyServer() as server, _proxy(tmp_path, server.port, inject=inject) as proxy:
        answer = _exchange(proxy, server.port, _get("/reflect?q=1", server.authority))
    (seen,) = server.seen
    # Control: the server did reflect the value.
    assert _leaks(seen.head)
    assert _statuses(answer) == [200] and not _leaks(answer)
    body = _dechunked(answer.split(b"\r\n\r\n", 1)[1])
    assert len(body) == len(seen.head) and b"*" * len(VALUE) in body


def _dechunked(data: bytes) -> bytes:
    body = b""
    while True:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return body
        body, data = body + data[:size], data[size + 2 :]


def test_the_mask_holds_back_only_what_could_begin_a_value() -> None:
    mask = ValueMask((_seal("127.0.0.1:1"),))
    # A piece that cannot begin the value goes on at once (a stream is not delayed).
    assert mask.feed(b"data: {}\n\n") == b"data: {}\n\n"
    # Control: a value split over three pieces is held until it can be masked whole.
    assert mask.feed(b"x " + VALUE[:5].encode()) == b"x "
    assert mask.feed(VALUE[5:20].encode()) == b""
    assert mask.feed(VALUE[20:].encode() + b" y") == b"*" * len(VALUE) + b" y"
    assert mask.feed(b"sk-") == b"" and mask.flush() == b"sk-"


def test_a_compressed_reflection_is_not_asked_for(tmp_path: Path) -> None:
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        answer = _exchange(
            proxy,
            server.port,
            _get("/reflect-gzip", server.authority, extra="Accept-Encoding: gzip, br\r\n"),
        )
    (seen,) = server.seen
    assert seen.header("Accept-Encoding") == ["identity"]
    assert _leaks(seen.head) and not _leaks(answer) and b"Content-Encoding" not in answer


def test_a_fragment_in_the_target_never_carries_the_value(tmp_path: Path) -> None:
    with QuirkyServer() as server, _proxy(tmp_path, server.port, inject="query:key") as proxy:
        answer = _exchange(proxy, server.port, _get("/plain?q=1#frag", server.authority))
        control = _exchange(proxy, server.port, _get("/plain?q=1", server.authority))
    assert not _leaks(answer)
    assert _statuses(answer) == [400] and _statuses(control) == [200]
    assert [s.target for s in server.seen] == [f"/plain?q=1&key={VALUE}"]


@pytest.mark.parametrize(
    ("how", "sealed"),
    [
        ("sealed.test", True),
        ("SEALED.test.", True),
        ("alias.test", False),  # another name for the same address
        ("127.0.0.1", False),  # the address itself
        ("sealed.test.alias.test", False),
    ],
)
@pytest.mark.parametrize("protocol", ["socks5", "connect"])
def test_only_the_name_the_grant_seals_gets_the_value(
    tmp_path: Path, how: str, sealed: bool, protocol: str
) -> None:
    with QuirkyServer() as server:
        names = ("sealed.test", "alias.test", "sealed.test.alias.test")
        resolver = StaticResolver({name: ("127.0.0.1",) for name in names})
        grant = NetworkGrant(mode="open", block_private=False)
        seal = _seal(f"sealed.test:{server.port}")
        with (
            running_proxy(
                tmp_path, grant, resolver=resolver, limits=LIMITS, seals=(seal,)
            ) as proxy,
            connect(proxy) as client,
        ):
            if protocol == "socks5":
                assert socks_connect(client, how, server.port) == 0
            else:
                client.sendall(f"CONNECT {how}:{server.port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                assert read_head(client).startswith(b"HTTP/1.1 200")
            host = f"sealed.test:{server.port}" if sealed else f"{how}:{server.port}"
            client.sendall(_get("/plain", host))
            client.shutdown(socket.SHUT_WR)
            answer = read_all(client)
    assert _statuses(answer) == [200] and not _leaks(answer)
    (seen,) = server.seen
    expected = VALUE if sealed else PLACEHOLDER
    assert seen.header("Authorization") == [f"Bearer {expected}"]


@pytest.mark.parametrize(
    "spelling",
    ["[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "2130706433", "127.1", "0x7f.0.0.1", "127.0.0.1."],
)
def test_another_spelling_of_the_sealed_address_is_the_same_destination(
    tmp_path: Path, spelling: str
) -> None:
    """Each spelling is read as 127.0.0.1 before anything else: it is the sealed
    destination (the value goes there, and only there: the connection is pinned to it)."""
    with QuirkyServer() as server, _proxy(tmp_path, server.port) as proxy:
        with connect(proxy) as client:
            client.sendall(f"CONNECT {spelling}:{server.port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert read_head(client).startswith(b"HTTP/1.1 200")
            client.sendall(_get("/plain", server.authority))
            client.shutdown(socket.SHUT_WR)
            answer = read_all(client)
        (record,) = proxy.drain(settle_seconds=10)[0]
    assert _statuses(answer) == [200] and not _leaks(answer)
    assert (record.host, record.address, record.secrets) == (
        "127.0.0.1",
        "127.0.0.1",
        ("API_TOKEN",),
    )
    assert server.seen[0].header("Authorization") == [f"Bearer {VALUE}"]


@pytest.mark.parametrize(
    ("name", "sealed"),
    [
        ("api.example.test", True),
        ("a.b.example.test", True),
        ("example.test", False),
        ("evil-example.test", False),
        ("example.test.evil.test", False),
        ("api.example.testx", False),
    ],
)
def test_a_wildcard_seal_covers_subdomains_only(tmp_path: Path, name: str, sealed: bool) -> None:
    with QuirkyServer() as server:
        resolver = StaticResolver({name: ("127.0.0.1",)})
        grant = NetworkGrant(mode="open", block_private=False)
        # With its port: a grant naming a host alone means HTTPS, and this is plain HTTP.
        seal = _seal(f"*.example.test:{server.port}")
        with (
            running_proxy(
                tmp_path, grant, resolver=resolver, limits=LIMITS, seals=(seal,)
            ) as proxy,
            connect(proxy) as client,
        ):
            assert socks_connect(client, name, server.port) == 0
            client.sendall(_get("/plain", f"{name}:{server.port}"))
            client.shutdown(socket.SHUT_WR)
            answer = read_all(client)
    assert _statuses(answer) == [200] and not _leaks(answer)
    (seen,) = server.seen
    assert seen.header("Authorization") == [f"Bearer {VALUE if sealed else PLACEHOLDER}"]


# --- the value itself ---------------------------------------------------------------------


@pytest.mark.parametrize("inject", ["bearer", "header:X-Api-Key"])
@pytest.mark.parametrize(
    "value", [VALUE + "\n", VALUE + " ", " " + VALUE, VALUE + "\r\nX: y", VALUE + "\u2603"]
)
def test_a_value_that_cannot_go_into_a_header_is_named_never_shown(
    tmp_path: Path, inject: str, value: str
) -> None:
    """A value pasted with a newline (or outside Latin-1) cannot be sent; the refusal
    says so without repeating the value, to the client or in the record."""
    with QuirkyServer() as server:
        with _proxy(tmp_path, server.port, inject=inject, value=value) as proxy:
            answer = _exchange(proxy, server.port, _get("/plain", server.authority))
        with _proxy(tmp_path, server.port, inject=inject) as control_proxy:
            control = _exchange(control_proxy, server.port, _get("/plain", server.authority))
    assert not _leaks(answer) and value.strip().encode("utf-8") not in answer
    assert _statuses(answer) == [500] and b"API_TOKEN" in answer
    (record,) = proxy.records
    assert VALUE not in record.reason and "API_TOKEN" in record.reason
    assert _statuses(control) == [200]
    assert len(server.seen) == 1 and len(server.received_value()) == 1


# --- TLS ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("upstream-cert"))


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> EgressAuthority:
    return EgressAuthority(tmp_path_factory.mktemp("var") / "egress_ca")


def _echo(request: RecordedRequest) -> Reply:
    return Reply(200, body=b"seen " + request.path.encode())


@contextmanager
def _https(
    tmp_path: Path, certificate: tuple[Path, Path], authority: EgressAuthority
) -> Iterator[tuple[LoopbackHttpServer, EgressProxy, ssl.SSLContext]]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    with LoopbackHttpServer(tls=context) as server:
        server.route("/echo", _echo)
        bundle = tmp_path / "bundle.pem"
        bundle.write_bytes(authority.trust_bundle())
        with _proxy(
            tmp_path,
            server.port,
            authority=authority,
            upstream_tls=upstream_context(str(certificate[0])),
        ) as proxy:
            yield server, proxy, ssl.create_default_context(cafile=str(bundle))


def _tls_get(tls: ssl.SSLSocket, host: str) -> bytes:
    tls.sendall(_get("/echo", host, extra="Connection: close\r\n"))
    return read_all(tls)


def test_tls_offering_only_h2_gets_http_1_1_or_nothing(
    tmp_path: Path, certificate: tuple[Path, Path], authority: EgressAuthority
) -> None:
    with _https(tmp_path, certificate, authority) as (server, proxy, trusting):
        with connect(proxy) as raw:
            _tunnel(raw, server.port)
            trusting.set_alpn_protocols(["h2"])
            tls = trusting.wrap_socket(raw, server_hostname="127.0.0.1")
            chosen = tls.selected_alpn_protocol()
            tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
            answer = read_all(tls)
        trusting.set_alpn_protocols(["h2", "http/1.1"])
        with connect(proxy) as raw:
            _tunnel(raw, server.port)
            tls = trusting.wrap_socket(raw, server_hostname="127.0.0.1")
            control_alpn = tls.selected_alpn_protocol()
            control = _tls_get(tls, f"127.0.0.1:{server.port}")
    assert chosen in (None, "http/1.1") and control_alpn == "http/1.1"
    assert not _leaks(answer) and _statuses(answer) in ([400], [505], [])
    assert _statuses(control) == [200]
    assert [r.header_values("Authorization") for r in server.requests] == [[f"Bearer {VALUE}"]]


def test_an_sni_naming_another_host_gets_the_tunnels_certificate_and_no_value_elsewhere(
    tmp_path: Path, certificate: tuple[Path, Path], authority: EgressAuthority
) -> None:
    other = "evil.example.invalid"
    with _https(tmp_path, certificate, authority) as (server, proxy, trusting):
        # A client checking the name it asked for refuses the certificate.
        with connect(proxy) as raw, pytest.raises(ssl.SSLCertVerificationError):
            _tunnel(raw, server.port)
            trusting.wrap_socket(raw, server_hostname=other)
        blind = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        blind.check_hostname = False
        blind.verify_mode = ssl.CERT_NONE
        answers = []
        for host in (other, f"127.0.0.1:{server.port}"):
            with connect(proxy) as raw:
                _tunnel(raw, server.port)
                tls = blind.wrap_socket(raw, server_hostname=other)
                presented = tls.getpeercert(binary_form=True)
                answers.append(_tls_get(tls, host))
    from cryptography import x509

    names = x509.load_der_x509_certificate(presented or b"").extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert [str(ip) for ip in names.value.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert names.value.get_values_for_type(x509.DNSName) == []
    assert _statuses(answers[0]) == [421] and _statuses(answers[1]) == [200]
    assert not any(_leaks(a) for a in answers)
    assert [r.header_values("Authorization") for r in server.requests] == [[f"Bearer {VALUE}"]]


@pytest.mark.parametrize(
    "hello",
    [
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a ClientHello cut short
        b"\x16\x03\x01\xff\xff" + b"\x00" * 1024,  # a record of nonsense
        b"\x16",
    ],
)
def test_a_tls_handshake_never_finished_is_cut_and_sends_nothing(
    tmp_path: Path, certificate: tuple[Path, Path], authority: EgressAuthority, hello: bytes
) -> None:
    with _https(tmp_path, certificate, authority) as (server, proxy, trusting):
        with connect(proxy) as raw:
            _tunnel(raw, server.port)
            raw.sendall(hello)
            # The proxy ends it (a TLS error, or the idle limit): reading returns.
            ended = read_all(raw)
        with connect(proxy) as raw:
            _tunnel(raw, server.port)
            control = _tls_get(
                trusting.wrap_socket(raw, server_hostname="127.0.0.1"), f"127.0.0.1:{server.port}"
            )
        records = proxy.drain(settle_seconds=10)[0]
    assert not _leaks(ended) and b"HTTP/1.1" not in ended
    assert _statuses(control) == [200] and len(server.requests) == 1
    assert len(records) == 2 and records[0].sealed_requests == 0
