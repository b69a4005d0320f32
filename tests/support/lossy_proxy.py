"""A loopback HTTP proxy that loses answers: the request reaches the console, the
answer never reaches the client (as when a proxy or the network fails after the
console acted). Only ever listens on and connects to 127.0.0.1."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

# How long the proxy waits for the console's answer to start before giving up.
UPSTREAM_TIMEOUT_SECONDS = 120.0


@dataclass
class LossyProxy:
    upstream_port: int
    # The next this-many requests are forwarded and their answers dropped.
    lose: int = 0
    lost: int = 0
    port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _take_loss(self) -> bool:
        with self._lock:
            if self.lose <= 0:
                return False
            self.lose -= 1
            self.lost += 1
            return True

    def handle(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        upstream.settimeout(UPSTREAM_TIMEOUT_SECONDS)
        with client, upstream:
            request = _read_request(client)
            if not request:
                return
            upstream.sendall(request)
            if self._take_loss():
                # The console has the request and starts answering: drop the answer.
                upstream.recv(1)
                return
            _pipe_back(upstream, client)


def _read_request(client: socket.socket) -> bytes:
    """One whole HTTP/1.1 request (headers and a Content-Length body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = 0
    kept = [lines[0]]
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
        if name.strip().lower() != b"connection":
            kept.append(line)
    # One request per connection: the console closes it after answering, and the
    # client, told so, opens a new one for its next request.
    kept.append(b"Connection: close")
    while len(body) < length:
        chunk = client.recv(65536)
        if not chunk:
            break
        body += chunk
    return b"\r\n".join(kept) + b"\r\n\r\n" + body


def _pipe_back(upstream: socket.socket, client: socket.socket) -> None:
    """The console's answer to the client, until the console closes the connection."""
    with contextlib.suppress(OSError):
        while chunk := upstream.recv(65536):
            client.sendall(chunk)


@contextmanager
def lossy_proxy(upstream_port: int) -> Iterator[LossyProxy]:
    """Serve the proxy for the block, one request per connection."""
    proxy = LossyProxy(upstream_port=upstream_port)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    proxy.port = listener.getsockname()[1]
    stopping = threading.Event()

    def serve() -> None:
        while not stopping.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=proxy.handle, args=(client,), daemon=True).start()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        yield proxy
    finally:
        stopping.set()
        server.join(5)
        listener.close()
