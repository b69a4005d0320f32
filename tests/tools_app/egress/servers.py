"""Loopback TCP servers and a proxy client for the egress tests (loopback only)."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tools_app.egress import EgressDecider, EgressProxy, NetworkGrant, ProxyLimits
from tools_app.net import Resolver


class ByteServer:
    """Reads ``expect`` bytes from each client, then sends ``answer`` bytes and closes.

    ``stall`` makes it send the first ``stall`` bytes and then keep the connection
    open without sending more (until the test ends); ``received`` totals what it read.
    """

    def __init__(
        self, host: str = "127.0.0.1", *, expect: int = 0, answer: int = 0, stall: int | None = None
    ) -> None:
        assert ipaddress.ip_address(host).is_loopback
        self.expect, self.answer, self.stall = expect, answer, stall
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, 0))
        self._sock.listen(16)
        self._sock.settimeout(0.1)
        self.host = host
        self.port = int(self._sock.getsockname()[1])
        self.accepted = 0
        self.received = 0
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self._done.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.accepted += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            got = 0
            while got < self.expect:
                data = conn.recv(65536)
                if not data:
                    break
                got += len(data)
            with self._lock:
                self.received += got
            try:
                if self.stall is not None:
                    conn.sendall(b"s" * self.stall)
                    self._done.wait(60)
                    return
                conn.sendall(b"d" * self.answer)
            except OSError:
                return

    def __enter__(self) -> ByteServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=5)
        self._sock.close()


@contextmanager
def running_proxy(
    tmp_path: Path,
    grant: NetworkGrant,
    *,
    resolver: Resolver | None = None,
    limits: ProxyLimits | None = None,
    **sealing: Any,
) -> Iterator[EgressProxy]:
    """An EgressProxy on a unix socket in ``tmp_path`` for ``grant`` (``sealing``: the
    proxy's ``seals``, ``authority`` and ``upstream_tls``)."""
    decider = EgressDecider(grant, agent_name="probe-agent", resolver=resolver)
    proxy = EgressProxy(decider, socket_path=tmp_path / "proxy.sock", limits=limits, **sealing)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()


def connect(proxy: EgressProxy) -> socket.socket:
    """A client connection to the proxy's socket (what the forwarder opens)."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(20)
    client.connect(str(proxy.socket_path))
    return client


def read_all(sock: socket.socket) -> bytes:
    """Everything until the other side closes."""
    chunks: list[bytes] = []
    while True:
        data = sock.recv(65536)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def read_head(sock: socket.socket) -> bytes:
    """An HTTP reply head, byte by byte (so no tunnel bytes are consumed)."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        data = sock.recv(1)
        if not data:
            break
        head += data
    return head


def socks_connect(sock: socket.socket, host: str, port: int) -> int:
    """The SOCKS5 handshake for ``host`` (a name, sent as a name); the reply code."""
    sock.sendall(b"\x05\x01\x00")
    assert sock.recv(2) == b"\x05\x00"
    try:
        packed = ipaddress.ip_address(host).packed
        atyp = b"\x01" if len(packed) == 4 else b"\x04"
        address = packed
    except ValueError:
        atyp, address = b"\x03", bytes([len(host)]) + host.encode()
    sock.sendall(b"\x05\x01\x00" + atyp + address + port.to_bytes(2, "big"))
    reply = b""
    while len(reply) < 10:
        data = sock.recv(10 - len(reply))
        if not data:
            break
        reply += data
    return reply[1] if len(reply) > 1 else -1
