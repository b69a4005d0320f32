"""Sealed secrets at the egress proxy: what ending the sandbox's TLS costs.

Figures (loopback only; the client is this process speaking to the proxy's unix
socket as the in-sandbox forwarder would):
- per new HTTPS connection: CONNECT, TLS handshake and one request, through a plain
  tunnel (the client's TLS goes to the server) vs a sealed one (TLS ended by the
  console's authority, the proxy's own verified TLS to the server, the value added);
- per request on a kept-alive HTTPS connection, plain tunnel vs sealed;
- per plain-HTTP request (absolute URL through the proxy), unsealed vs sealed.
Bounded: fixed counts.
"""

from __future__ import annotations

import http.server
import socket
import ssl
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from bench.measure import emit_row, ms_row, timed_ms
from common.vocabulary.sealing import parse_injection, parse_sealed_hosts
from tests.acceptance.certificates import self_signed
from tools_app.egress import EgressDecider, EgressProxy, NetworkGrant
from tools_app.egress.authority import EgressAuthority, upstream_context
from tools_app.egress.seal import Seal

CONNECTIONS = 150
REQUESTS = 400
VALUE = "sk-bench-" + "9" * 40


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body go out in two writes: without this, Nagle and delayed ACKs add 40 ms.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = b"ok" * 512
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _server(tls: ssl.SSLContext | None) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


def _read_response(sock: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += sock.recv(65536)


def _request(host: str) -> bytes:
    return f"GET /x HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer placeholder\r\n\r\n".encode()


def _tunnel(proxy: Path, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(proxy))
    sock.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += sock.recv(1)
    return sock


def _proxy(root: Path, name: str, port: int, seals: tuple[Seal, ...], **tls: object) -> EgressProxy:
    grant = NetworkGrant(mode="allowlist_only", allowed_hosts=(f"127.0.0.1:{port}",))
    proxy = EgressProxy(
        EgressDecider(grant, agent_name="bench"),
        socket_path=root / f"{name}.sock",
        max_records=1_000_000,
        seals=seals,
        **tls,  # type: ignore[arg-type]
    )
    proxy.start()
    return proxy


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-sealed-"))
    cert, key = self_signed(root)
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    https = _server(server_tls)
    plain_http = _server(None)
    https_port, http_port = https.server_address[1], plain_http.server_address[1]
    authority = EgressAuthority(root / "egress_ca")
    bundle = root / "bundle.pem"
    bundle.write_bytes(authority.certificate_pem + cert.read_bytes())
    client_tls = ssl.create_default_context(cafile=str(bundle))

    def seal(port: int) -> tuple[Seal, ...]:
        return (
            Seal(
                "TOKEN", VALUE, parse_sealed_hosts([f"127.0.0.1:{port}"]), parse_injection("bearer")
            ),
        )

    tls = {"authority": authority, "upstream_tls": upstream_context(str(cert))}
    proxies = {
        "plain": _proxy(root, "plain", https_port, ()),
        "sealed": _proxy(root, "sealed", https_port, seal(https_port), **tls),
        "http-plain": _proxy(root, "http-plain", http_port, ()),
        "http-sealed": _proxy(root, "http-sealed", http_port, seal(http_port), **tls),
    }
    host = f"127.0.0.1:{https_port}"

    def new_connection(kind: str) -> Callable[[], None]:
        def once() -> None:
            raw = _tunnel(proxies[kind].socket_path, https_port)
            with client_tls.wrap_socket(raw, server_hostname="127.0.0.1") as tls_sock:
                tls_sock.sendall(_request(host))
                _read_response(tls_sock)

        return once

    for kind in ("plain", "sealed"):
        new_connection(kind)()  # warm: the leaf certificate is made once per host
        samples = [timed_ms(new_connection(kind)) for _ in range(CONNECTIONS)]
        emit_row(
            ms_row(
                f"egress HTTPS new connection, {kind}",
                samples,
                "CONNECT + TLS handshake + one request"
                + (
                    ": TLS ended by the console's authority, value added"
                    if kind == "sealed"
                    else ""
                ),
            )
        )
    for kind in ("plain", "sealed"):
        raw = _tunnel(proxies[kind].socket_path, https_port)
        with client_tls.wrap_socket(raw, server_hostname="127.0.0.1") as tls_sock:

            def one(tls_sock: ssl.SSLSocket = tls_sock) -> None:
                tls_sock.sendall(_request(host))
                _read_response(tls_sock)

            one()
            samples = [timed_ms(one) for _ in range(REQUESTS)]
        emit_row(
            ms_row(f"egress HTTPS request on an open connection, {kind}", samples, "1 KB answer")
        )
    for kind in ("http-plain", "http-sealed"):
        url = f"http://127.0.0.1:{http_port}/x"

        def proxied(kind: str = kind, url: str = url) -> None:
            sock = socket.socket(socket.AF_UNIX)
            sock.connect(str(proxies[kind].socket_path))
            with sock:
                sock.sendall(
                    f"GET {url} HTTP/1.1\r\nHost: 127.0.0.1:{http_port}\r\n"
                    "Authorization: Bearer placeholder\r\n\r\n".encode()
                )
                _read_response(sock)

        proxied()
        samples = [timed_ms(proxied) for _ in range(CONNECTIONS)]
        emit_row(
            ms_row(
                f"egress plain HTTP request, {kind.removeprefix('http-')}",
                samples,
                "absolute URL through the proxy",
            )
        )
    for proxy in proxies.values():
        proxy.stop()
    https.shutdown()
    plain_http.shutdown()


if __name__ == "__main__":
    main()
