"""Sealed secrets at the egress proxy: the value is added on the way out, to the sealed
destination only, over plain HTTP and over HTTPS ended by the console's authority.

Real loopback servers (HTTP and HTTPS with a certificate of the test's own), a real
proxy on a unix socket, raw client sockets speaking CONNECT, SOCKS5 and TLS. Every
refusal has its control beside it.
"""

from __future__ import annotations

import base64
import os
import socket
import ssl
import stat
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from common.vocabulary.sealing import SealingRuleError, parse_injection, parse_sealed_hosts
from tests.acceptance.certificates import self_signed
from tests.tools_app.egress.servers import (
    connect,
    read_all,
    read_head,
    running_proxy,
    socks_connect,
)
from tests.tools_app.net.servers import LoopbackHttpServer, RecordedRequest, Reply
from tools_app.egress import EgressProxy, NetworkGrant
from tools_app.egress.authority import CA_CERT, CA_KEY, EgressAuthority, upstream_context
from tools_app.egress.seal import Seal

VALUE = "sk-sealed-" + "7f3a9c" * 6
PLACEHOLDER = "${secret:API_TOKEN}"


def _seal(port: int, inject: str = "bearer", host: str = "127.0.0.1") -> Seal:
    return Seal(
        secret="API_TOKEN",
        value=VALUE,
        hosts=parse_sealed_hosts([f"{host}:{port}"]),
        injection=parse_injection(inject),
    )


def _echo(request: RecordedRequest) -> Reply:
    return Reply(200, body=b"seen " + request.path.encode())


def _header(request: RecordedRequest, name: str) -> list[str]:
    return [value for key, value in request.headers if key.lower() == name.lower()]


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("upstream-cert"))


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> EgressAuthority:
    return EgressAuthority(tmp_path_factory.mktemp("var") / "egress_ca")


@contextmanager
def _https_server(certificate: tuple[Path, Path]) -> Iterator[LoopbackHttpServer]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    with LoopbackHttpServer(tls=context) as server:
        server.route("/echo", _echo)
        yield server


def _client_tls(authority: EgressAuthority, where: Path) -> ssl.SSLContext:
    bundle = where / "bundle.pem"
    bundle.write_bytes(authority.trust_bundle())
    return ssl.create_default_context(cafile=str(bundle))


def _request(path: str, host: str, *, extra: str = "", method: str = "GET") -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {PLACEHOLDER}\r\n"
        f"{extra}Content-Length: 0\r\n\r\n"
    ).encode()


def _response(sock: socket.socket | ssl.SSLSocket) -> tuple[bytes, bytes]:
    """One response (head, body) by its Content-Length."""
    head = read_head(sock)
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    body = b""
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        if not chunk:
            break
        body += chunk
    return head, body


def _tunnel(client: socket.socket, port: int) -> None:
    client.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    assert read_head(client).startswith(b"HTTP/1.1 200")


def _sealed_proxy(
    tmp_path: Path,
    port: int,
    *,
    authority: EgressAuthority | None = None,
    upstream_ca: Path | None = None,
    inject: str = "bearer",
) -> AbstractContextManager[EgressProxy]:
    """A proxy allowing 127.0.0.1:``port`` with the test's secret sealed for it."""
    return running_proxy(
        tmp_path,
        _grant(port),
        seals=(_seal(port, inject),),
        authority=authority,
        upstream_tls=upstream_context(str(upstream_ca) if upstream_ca else None),
    )


def _grant(*ports: int) -> NetworkGrant:
    return NetworkGrant(
        mode="allowlist_only", allowed_hosts=tuple(f"127.0.0.1:{port}" for port in ports)
    )


# --- plain HTTP -----------------------------------------------------------------------


def test_a_plain_request_to_the_sealed_host_carries_the_value_and_others_only_the_placeholder(
    tmp_path: Path,
) -> None:
    with LoopbackHttpServer() as sealed, LoopbackHttpServer() as other:
        for server in (sealed, other):
            server.route("/echo", _echo)
        grant = _grant(sealed.port, other.port)
        with running_proxy(tmp_path, grant, seals=(_seal(sealed.port),)) as proxy:
            for server in (sealed, other):
                with connect(proxy) as client:
                    client.sendall(_request(server.url("/echo"), f"127.0.0.1:{server.port}"))
                    head, body = _response(client)
                    assert head.startswith(b"HTTP/1.1 200") and body == b"seen /echo"
        records = {r.port: r for r in proxy.records}
    (seen,) = sealed.requests
    assert _header(seen, "Authorization") == [f"Bearer {VALUE}"]
    # Control: the same request to a host the seal does not name keeps the placeholder.
    (unsealed,) = other.requests
    assert _header(unsealed, "Authorization") == [f"Bearer {PLACEHOLDER}"]
    assert records[sealed.port].secrets == ("API_TOKEN",)
    assert records[sealed.port].sealed_requests == 1
    assert records[sealed.port].as_data()["secrets"] == ["API_TOKEN"]
    assert records[other.port].secrets == () and "secrets" not in records[other.port].as_data()


@pytest.mark.parametrize(
    ("inject", "header", "expected"),
    [
        ("header:X-Api-Key", "X-Api-Key", VALUE),
        (
            "basic:deploy",
            "Authorization",
            "Basic " + base64.b64encode(f"deploy:{VALUE}".encode()).decode(),
        ),
        ("basic", "Authorization", "Basic " + base64.b64encode(VALUE.encode()).decode()),
    ],
)
def test_each_injection_puts_the_value_where_the_grant_says(
    tmp_path: Path, inject: str, header: str, expected: str
) -> None:
    with LoopbackHttpServer() as server:
        server.route("/echo", _echo)
        with _sealed_proxy(tmp_path, server.port, inject=inject) as proxy, connect(proxy) as client:
            extra = f"{header}: {PLACEHOLDER}\r\n" if header != "Authorization" else ""
            client.sendall(_request(server.url("/echo"), f"127.0.0.1:{server.port}", extra=extra))
            assert _response(client)[0].startswith(b"HTTP/1.1 200")
    (seen,) = server.requests
    # Whatever the program put there is replaced, never doubled.
    assert _header(seen, header) == [expected]


def test_a_query_injection_sets_the_parameter_once(tmp_path: Path) -> None:
    with LoopbackHttpServer() as server:
        server.route("/echo", _echo)
        with (
            _sealed_proxy(tmp_path, server.port, inject="query:api_key") as proxy,
            connect(proxy) as client,
        ):
            url = server.url(f"/echo?q=1&api_key={PLACEHOLDER}")
            client.sendall(_request(url, f"127.0.0.1:{server.port}"))
            assert _response(client)[0].startswith(b"HTTP/1.1 200")
    (seen,) = server.requests
    assert seen.path == f"/echo?q=1&api_key={VALUE}"


def test_a_host_header_naming_another_tenant_is_refused_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    """Domain fronting: the connection goes to the sealed host, the Host header names
    another site the same server might route to (and echo the header back)."""
    with LoopbackHttpServer() as server:
        server.route("/echo", _echo)
        with _sealed_proxy(tmp_path, server.port) as proxy, connect(proxy) as client:
            client.sendall(_request(server.url("/echo"), "echo.example.invalid"))
            head, body = _response(client)
            with connect(proxy) as control:
                control.sendall(_request(server.url("/echo"), f"127.0.0.1:{server.port}"))
                assert _response(control)[0].startswith(b"HTTP/1.1 200")
    assert head.startswith(b"HTTP/1.1 421") and b"goes only to requests for" in body
    assert len(server.requests) == 1  # the control only


# --- HTTPS: the console's authority ends the client's TLS -----------------------------


def test_https_through_connect_gets_the_value_over_a_verified_upstream(
    tmp_path: Path, authority: EgressAuthority, certificate: tuple[Path, Path]
) -> None:
    with _https_server(certificate) as server:
        with (
            _sealed_proxy(
                tmp_path, server.port, authority=authority, upstream_ca=certificate[0]
            ) as proxy,
            connect(proxy) as raw,
        ):
            _tunnel(raw, server.port)
            tls = _client_tls(authority, tmp_path).wrap_socket(raw, server_hostname="127.0.0.1")
            # Two requests on one kept-alive connection: each is sealed.
            for path in ("/echo", "/echo?again"):
                tls.sendall(_request(path, f"127.0.0.1:{server.port}"))
                head, _ = _response(tls)
                assert head.startswith(b"HTTP/1.1 200"), head
            tls.close()
        (record,) = proxy.records
    assert [_header(r, "Authorization") for r in server.requests] == [[f"Bearer {VALUE}"]] * 2
    # Closed by the client, or cut as the proxy stops right after: two requests sealed.
    assert record.sealed_requests == 2 and record.secrets == ("API_TOKEN",), record


def test_the_sandbox_client_refuses_the_authority_it_was_not_given(
    tmp_path: Path, authority: EgressAuthority, certificate: tuple[Path, Path]
) -> None:
    """Outside a sandbox nothing trusts the authority: a client with the system's roots
    only refuses the proxy's certificate (and so never sends its request)."""
    with (
        _https_server(certificate) as server,
        _sealed_proxy(
            tmp_path, server.port, authority=authority, upstream_ca=certificate[0]
        ) as proxy,
        connect(proxy) as raw,
    ):
        _tunnel(raw, server.port)
        with pytest.raises(ssl.SSLCertVerificationError):
            ssl.create_default_context().wrap_socket(raw, server_hostname="127.0.0.1")
    assert server.requests == []


def test_an_upstream_whose_certificate_does_not_verify_never_gets_the_value(
    tmp_path: Path, authority: EgressAuthority, certificate: tuple[Path, Path]
) -> None:
    with _https_server(certificate) as server:
        # The proxy trusts only the system's roots: the test server's certificate fails.
        with (
            _sealed_proxy(tmp_path, server.port, authority=authority) as proxy,
            connect(proxy) as raw,
        ):
            _tunnel(raw, server.port)
            tls = _client_tls(authority, tmp_path).wrap_socket(raw, server_hostname="127.0.0.1")
            tls.sendall(_request("/echo", f"127.0.0.1:{server.port}"))
            head, body = _response(tls)
        (record,) = proxy.records
    assert server.requests == []
    assert head.startswith(b"HTTP/1.1 502") and b"could not be verified" in body
    assert "certificate could not be verified" in record.reason, record


def test_socks5_with_tls_to_the_sealed_host_is_sealed_too(
    tmp_path: Path, authority: EgressAuthority, certificate: tuple[Path, Path]
) -> None:
    with (
        _https_server(certificate) as server,
        _sealed_proxy(
            tmp_path, server.port, authority=authority, upstream_ca=certificate[0]
        ) as proxy,
        connect(proxy) as raw,
    ):
        assert socks_connect(raw, "127.0.0.1", server.port) == 0
        tls = _client_tls(authority, tmp_path).wrap_socket(raw, server_hostname="127.0.0.1")
        tls.sendall(_request("/echo", f"127.0.0.1:{server.port}"))
        assert _response(tls)[0].startswith(b"HTTP/1.1 200")
    (seen,) = server.requests
    assert _header(seen, "Authorization") == [f"Bearer {VALUE}"]


# --- framing the client chooses --------------------------------------------------------


def test_a_request_smuggled_in_an_ambiguous_body_never_reaches_the_server_as_a_request(
    tmp_path: Path,
) -> None:
    smuggled = b"GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with LoopbackHttpServer() as server:
        server.route("/echo", _echo)
        server.route("/smuggled", _echo)
        with _sealed_proxy(tmp_path, server.port) as proxy, connect(proxy) as client:
            body = b"0\r\n\r\n" + smuggled
            client.sendall(
                (
                    f"POST {server.url('/echo')} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                    f"Content-Length: {len(body)}\r\nTransfer-Encoding: chunked\r\n\r\n"
                ).encode()
                + body
            )
            answer = read_all(client)
    assert server.count("/smuggled") == 0
    # Read either way, the client got one answer at most and the server one request.
    assert answer.count(b"HTTP/1.1 ") <= 1
    assert server.count("/echo") <= 1


def test_a_second_request_for_another_host_on_a_sealed_connection_is_refused(
    tmp_path: Path,
) -> None:
    with LoopbackHttpServer() as server:
        server.route("/echo", _echo)
        with _sealed_proxy(tmp_path, server.port) as proxy, connect(proxy) as client:
            _tunnel(client, server.port)
            client.sendall(_request("/echo", f"127.0.0.1:{server.port}"))
            assert _response(client)[0].startswith(b"HTTP/1.1 200")
            client.sendall(_request("http://other.example.invalid/echo", "other.example.invalid"))
            head, _ = _response(client)
    assert head.startswith(b"HTTP/1.1 421")
    assert len(server.requests) == 1


def test_a_websocket_upgrade_is_not_offered_to_the_server(tmp_path: Path) -> None:
    with LoopbackHttpServer() as server:
        server.route("/echo", _echo)
        with _sealed_proxy(tmp_path, server.port) as proxy, connect(proxy) as client:
            extra = "Connection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n"
            client.sendall(_request(server.url("/echo"), f"127.0.0.1:{server.port}", extra=extra))
            assert _response(client)[0].startswith(b"HTTP/1.1 200")
    (seen,) = server.requests
    assert _header(seen, "Upgrade") == []
    assert all("upgrade" not in value.lower() for value in _header(seen, "Connection"))


# --- the authority and the rules ------------------------------------------------------


def test_the_authority_is_private_and_shared_by_every_process_of_the_console(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "egress_ca"
    first = EgressAuthority(directory)
    second = EgressAuthority(directory)
    assert first.certificate_pem == second.certificate_pem
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(directory / CA_KEY).st_mode) == 0o600
    assert (directory / CA_CERT).read_bytes() == first.certificate_pem
    first.server_context("api.example.com")
    # Leaf chains are loaded and gone: no key lies around per host.
    assert list((directory / "leaves").iterdir()) == []


@pytest.mark.parametrize(
    "bad",
    [
        "header:Host",
        "header:Content-Length",
        "header:",
        "query:",
        "cookie",
        "basic:a:b",
        "header:X Y",
    ],
)
def test_an_injection_that_would_reframe_or_is_unknown_is_refused_with_what_is_allowed(
    bad: str,
) -> None:
    with pytest.raises(SealingRuleError) as refused:
        parse_injection(bad)
    assert "allowed: bearer, basic, basic:<user>, header:<Name> or query:<param>" in str(
        refused.value
    )
    # Control: the allowed spellings parse.
    for good in ("bearer", "basic", "basic:deploy", "header:X-Api-Key", "query:key"):
        assert parse_injection(good).display() == good


def test_sealed_hosts_are_canonical_and_bad_ones_named() -> None:
    rules = parse_sealed_hosts(["API.Example.com", "*.example.org:443", "api.example.com"])
    assert [r.display() for r in rules] == ["api.example.com", "*.example.org:443"]
    with pytest.raises(SealingRuleError, match="http://x"):
        parse_sealed_hosts(["http://x"])


def test_no_seal_no_change(tmp_path: Path) -> None:
    """Control for the whole module: a proxy with no seals passes the placeholder as is."""
    with LoopbackHttpServer() as server:
        server.route("/echo", _echo)
        with running_proxy(tmp_path, _grant(server.port)) as proxy, connect(proxy) as client:
            client.sendall(_request(server.url("/echo"), f"127.0.0.1:{server.port}"))
            assert read_head(client).startswith(b"HTTP/1.1 200")
    (seen,) = server.requests
    assert _header(seen, "Authorization") == [f"Bearer {PLACEHOLDER}"]


def test_a_grant_naming_a_host_alone_never_sends_the_value_over_plain_http(
    tmp_path: Path,
) -> None:
    with LoopbackHttpServer() as server:
        server.route("/echo", _echo)
        hostless = Seal(
            secret="API_TOKEN",
            value=VALUE,
            hosts=parse_sealed_hosts(["127.0.0.1"]),
            injection=parse_injection("bearer"),
        )
        with (
            running_proxy(tmp_path, _grant(server.port), seals=(hostless,)) as proxy,
            connect(proxy) as client,
        ):
            client.sendall(_request(server.url("/echo"), f"127.0.0.1:{server.port}"))
            head, body = _response(client)
    assert head.startswith(b"HTTP/1.1 403") and b"over TLS only" in body, head + body
    assert server.requests == []
    # Control: the same grant naming the port sends it (the other tests of this module).


def test_routing_headers_of_reverse_proxies_never_go_on_a_sealed_request(tmp_path: Path) -> None:
    with LoopbackHttpServer() as server:
        server.route("/echo", _echo)
        with _sealed_proxy(tmp_path, server.port) as proxy, connect(proxy) as client:
            extra = (
                "X-Forwarded-Host: echo.example.invalid\r\nForwarded: host=echo.example.invalid\r\n"
                "X-Original-URL: /elsewhere\r\nX-Request-Id: kept\r\n"
            )
            client.sendall(_request(server.url("/echo"), f"127.0.0.1:{server.port}", extra=extra))
            assert _response(client)[0].startswith(b"HTTP/1.1 200")
    (seen,) = server.requests
    for name in ("X-Forwarded-Host", "Forwarded", "X-Original-URL"):
        assert _header(seen, name) == [], name
    assert _header(seen, "X-Request-Id") == ["kept"]  # control: other headers pass
    assert _header(seen, "Authorization") == [f"Bearer {VALUE}"]
