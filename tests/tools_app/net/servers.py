"""Real servers for network tests, bound to loopback addresses only.

``LoopbackHttpServer`` answers from a route table and records every request it
receives, so a test can prove that a refused destination got no connection.
``LoopbackDnsServer`` answers A/AAAA queries from a function and counts them,
so a test can change its answers between check and connect.
"""

from __future__ import annotations

import http.server
import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tools_app.net.dnswire import DnsWireError, decode_question, encode_response

# Every write loop in a handler is bounded in count; the client stops reading far earlier.
MAX_STREAM_CHUNKS = 4096


def _require_loopback(host: str) -> None:
    assert ipaddress.ip_address(host).is_loopback, f"test servers bind loopback only, not {host}"


@dataclass
class RecordedRequest:
    """One request as the server saw it."""

    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes

    def header_values(self, name: str) -> list[str]:
        """Every value of header ``name`` (case-insensitive)."""
        return [v for k, v in self.headers if k.lower() == name.lower()]


@dataclass
class Reply:
    """What a route answers: status, headers and a body (bytes or an iterator of chunks)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | Iterable[bytes] = b""


Route = Callable[[RecordedRequest], Reply]


class LoopbackHttpServer:
    """A threaded HTTP/1.1 server on a loopback address, answering from ``routes``."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, *, tls: ssl.SSLContext | None = None
    ) -> None:
        _require_loopback(host)
        self.routes: dict[str, Route] = {}
        self.requests: list[RecordedRequest] = []
        self.stream_stopped_early = threading.Event()
        self._lock = threading.Lock()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = RecordedRequest(self.command, self.path, list(self.headers.items()), body)
                with outer._lock:
                    outer.requests.append(request)
                route = outer.routes.get(self.path.split("?", 1)[0])
                reply = route(request) if route else Reply(404, body=b"no such route")
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if isinstance(reply.body, bytes):
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(reply.body)
                    return
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for count, chunk in enumerate(reply.body):
                        if count >= MAX_STREAM_CHUNKS:
                            return
                        self.wfile.write(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    outer.stream_stopped_early.set()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

        class Server(http.server.ThreadingHTTPServer):
            address_family = family
            daemon_threads = True

        self._server = Server((host, port), Handler)
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self.host = host
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def origin(self) -> str:
        """``http(s)://host:port`` of this server."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def url(self, path: str) -> str:
        """An absolute URL on this server."""
        return self.origin + path

    def route(self, path: str, reply: Reply | Route) -> None:
        """Answer ``path`` with a fixed reply or a function of the request."""
        if isinstance(reply, Reply):
            fixed = reply

            def answer(_request: RecordedRequest) -> Reply:
                return fixed

            self.routes[path] = answer
        else:
            self.routes[path] = reply

    def count(self, path: str | None = None) -> int:
        """How many requests arrived (for ``path`` only, when given)."""
        with self._lock:
            return sum(1 for r in self.requests if path is None or r.path == path)

    def __enter__(self) -> LoopbackHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def endless(chunk: bytes = b"x" * 65536) -> Iterator[bytes]:
    """A body that would never end (the handler's chunk bound stops it eventually)."""
    while True:
        yield chunk


Answer = Callable[[str, int, int], list[str]]
"""(name, qtype, how many queries for this name and type so far) -> addresses."""


class LoopbackDnsServer:
    """A UDP DNS server on 127.0.0.1 answering A/AAAA queries from ``answer``."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.queries: list[tuple[str, int]] = []
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self.host = "127.0.0.1"
        self.port = int(self._sock.getsockname()[1])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self._sock.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                question = decode_question(data)
            except DnsWireError:
                continue
            with self._lock:
                seen = self.queries.count((question.name, question.qtype))
                self.queries.append((question.name, question.qtype))
            addresses = self.answer(question.name, question.qtype, seen)
            self._sock.sendto(encode_response(question, addresses), peer)

    def count(self, name: str, qtype: int | None = None) -> int:
        """Queries received for ``name`` (of ``qtype`` when given)."""
        with self._lock:
            return sum(1 for n, t in self.queries if n == name and qtype in (None, t))

    def __enter__(self) -> LoopbackDnsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()


@dataclass
class StaticResolver:
    """A resolver answering from a dict; records which names it was asked for."""

    table: dict[str, tuple[str, ...]]
    asked: list[str] = field(default_factory=list)

    def resolve(self, host: str, port: int) -> tuple[str, ...]:
        """The table's addresses for ``host``; an unknown name fails the test loudly."""
        self.asked.append(host)
        from tools_app.net.errors import EgressResolutionError

        if host not in self.table:
            raise EgressResolutionError(f"host {host!r} does not resolve")
        return self.table[host]
