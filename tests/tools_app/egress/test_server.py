"""The egress proxy over a real unix socket to real loopback servers: what passes, what not.

Every refusal has its positive control beside it: the same proxy, the same kind
of request, to the destination the grant allows.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from tests.tools_app.egress.servers import (
    ByteServer,
    connect,
    read_all,
    read_head,
    running_proxy,
    socks_connect,
)
from tests.tools_app.net.servers import LoopbackHttpServer, Reply, StaticResolver
from tools_app.egress import (
    ConnectionRecord,
    EgressOutcome,
    EgressProtocol,
    NetworkGrant,
    ProxyLimits,
)


def _allow(*entries: str, mode: str = "allowlist_only") -> NetworkGrant:
    return NetworkGrant(mode=mode, allowed_hosts=entries)


def _tunnel(proxy_sock: socket.socket, target: str) -> bytes:
    proxy_sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    return read_head(proxy_sock)


def test_connect_tunnel_reaches_allowlisted_port_with_exact_byte_counts(tmp_path: Path) -> None:
    with ByteServer(expect=1234, answer=56789) as server:
        grant = _allow(f"127.0.0.1:{server.port}")
        with running_proxy(tmp_path, grant) as proxy, connect(proxy) as client:
            head = _tunnel(client, f"127.0.0.1:{server.port}")
            assert head.startswith(b"HTTP/1.1 200")
            client.sendall(b"u" * 1234)
            assert read_all(client) == b"d" * 56789
        (record,) = proxy.records
    assert record.outcome is EgressOutcome.CLOSED, record
    assert (record.protocol, record.host, record.port) == (
        EgressProtocol.CONNECT,
        "127.0.0.1",
        server.port,
    )
    assert (record.bytes_up, record.bytes_down, record.address) == (1234, 56789, "127.0.0.1")


def test_connect_to_other_loopback_port_is_refused_and_never_opened(tmp_path: Path) -> None:
    with ByteServer(answer=5) as allowed, ByteServer(answer=5) as other:
        with running_proxy(tmp_path, _allow(f"127.0.0.1:{allowed.port}")) as proxy:
            with connect(proxy) as client:
                head = _tunnel(client, f"127.0.0.1:{other.port}")
            with connect(proxy) as control:
                assert _tunnel(control, f"127.0.0.1:{allowed.port}").startswith(b"HTTP/1.1 200")
                assert read_all(control) == b"ddddd"
        refused, allowed_record = proxy.records
    assert head.startswith(b"HTTP/1.1 403")
    assert b"not on the allowlist" in head
    assert other.accepted == 0 and allowed.accepted == 1
    assert refused.outcome is EgressOutcome.REFUSED and "allowlist" in refused.reason
    assert allowed_record.outcome is EgressOutcome.CLOSED


@pytest.mark.parametrize("mode", ["allowlist_only", "open"])
def test_other_loopback_address_is_refused_even_in_open_mode(tmp_path: Path, mode: str) -> None:
    with ByteServer("127.0.0.2", answer=3) as hidden, ByteServer(answer=3) as allowed:
        grant = _allow(f"127.0.0.1:{allowed.port}", mode=mode)
        with running_proxy(tmp_path, grant) as proxy:
            with connect(proxy) as client:
                head = _tunnel(client, f"127.0.0.2:{hidden.port}")
            with connect(proxy) as control:
                assert _tunnel(control, f"127.0.0.1:{allowed.port}").startswith(b"HTTP/1.1 200")
                assert read_all(control) == b"ddd"
    assert head.startswith(b"HTTP/1.1 403")
    assert hidden.accepted == 0
    if mode == "open":
        assert b"loopback range" in head


def test_ipv6_loopback_is_refused(tmp_path: Path) -> None:
    with ByteServer("::1", answer=3) as hidden, ByteServer(answer=3) as allowed:
        grant = _allow(f"127.0.0.1:{allowed.port}", mode="open")
        with running_proxy(tmp_path, grant) as proxy:
            with connect(proxy) as client:
                head = _tunnel(client, f"[::1]:{hidden.port}")
            with connect(proxy) as control:
                assert socks_connect(control, "127.0.0.1", allowed.port) == 0
                assert read_all(control) == b"ddd"
            with connect(proxy) as socks:
                assert socks_connect(socks, "::1", hidden.port) == 2  # not allowed by ruleset
    assert head.startswith(b"HTTP/1.1 403") and b"loopback address ::1" in head
    assert hidden.accepted == 0


def test_ipv6_loopback_allowlisted_by_address_and_port_is_reachable(tmp_path: Path) -> None:
    with (
        ByteServer("::1", answer=4) as server,
        running_proxy(tmp_path, _allow(f"[::1]:{server.port}")) as proxy,
        connect(proxy) as client,
    ):
        assert _tunnel(client, f"[::1]:{server.port}").startswith(b"HTTP/1.1 200")
        assert read_all(client) == b"dddd"


def test_name_resolving_to_loopback_is_refused_even_when_the_name_is_allowlisted(
    tmp_path: Path,
) -> None:
    resolver = StaticResolver({"internal.example.test": ("127.0.0.1",)})
    with ByteServer(answer=2) as server:
        grant = _allow(f"internal.example.test:{server.port}", f"127.0.0.1:{server.port}")
        with running_proxy(tmp_path, grant, resolver=resolver) as proxy:
            with connect(proxy) as client:
                head = _tunnel(client, f"internal.example.test:{server.port}")
            with connect(proxy) as socks:
                code = socks_connect(socks, "internal.example.test", server.port)
            with connect(proxy) as control:
                assert _tunnel(control, f"127.0.0.1:{server.port}").startswith(b"HTTP/1.1 200")
                assert read_all(control) == b"dd"
    assert head.startswith(b"HTTP/1.1 403") and b"loopback range" in head
    assert code == 2
    assert resolver.asked == ["internal.example.test", "internal.example.test"]
    assert server.accepted == 1  # the control only


def test_socks5_connect_counts_bytes_and_refuses_udp_and_bind(tmp_path: Path) -> None:
    with ByteServer(expect=100, answer=300) as server:
        with running_proxy(tmp_path, _allow(f"127.0.0.1:{server.port}")) as proxy:
            with connect(proxy) as client:
                assert socks_connect(client, "127.0.0.1", server.port) == 0
                client.sendall(b"x" * 100)
                assert len(read_all(client)) == 300
            for command in (2, 3):  # BIND, UDP ASSOCIATE
                with connect(proxy) as other:
                    other.sendall(b"\x05\x01\x00")
                    assert other.recv(2) == b"\x05\x00"
                    other.sendall(
                        bytes([5, command, 0, 1, 127, 0, 0, 1]) + server.port.to_bytes(2, "big")
                    )
                    assert other.recv(10)[1] == 7  # command not supported
        ok, bind, udp = proxy.records
    assert (ok.protocol, ok.outcome, ok.bytes_up, ok.bytes_down) == (
        EgressProtocol.SOCKS5,
        EgressOutcome.CLOSED,
        100,
        300,
    )
    assert bind.outcome is EgressOutcome.INVALID and "BIND" in bind.reason
    assert udp.outcome is EgressOutcome.INVALID and "UDP ASSOCIATE" in udp.reason
    assert server.accepted == 1


def test_plain_http_is_forwarded_in_origin_form_and_other_hosts_refused(tmp_path: Path) -> None:
    with LoopbackHttpServer() as web, LoopbackHttpServer("127.0.0.2") as hidden:
        web.route("/hello", Reply(body=b"hello through the proxy"))
        with running_proxy(tmp_path, _allow(f"127.0.0.1:{web.port}")) as proxy:
            with connect(proxy) as client:
                client.sendall(
                    f"GET {web.url('/hello')} HTTP/1.1\r\nHost: 127.0.0.1:{web.port}\r\n"
                    "Proxy-Connection: keep-alive\r\n\r\n".encode()
                )
                answer = read_all(client)
            with connect(proxy) as refused:
                refused.sendall(
                    f"GET {hidden.url('/')} HTTP/1.1\r\nHost: 127.0.0.2\r\n\r\n".encode()
                )
                denied = read_all(refused)
        forwarded, refused_record = proxy.records
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"hello through the proxy")
    (request,) = web.requests
    assert request.path == "/hello"
    assert not request.header_values("Proxy-Connection")
    assert request.header_values("Connection") == ["close"]
    assert forwarded.protocol is EgressProtocol.HTTP and forwarded.bytes_down == len(answer)
    assert denied.startswith(b"HTTP/1.1 403") and hidden.count() == 0
    assert refused_record.outcome is EgressOutcome.REFUSED


def test_network_none_refuses_everything(tmp_path: Path) -> None:
    with ByteServer(answer=1) as server:
        grant = NetworkGrant(mode="none", allowed_hosts=(f"127.0.0.1:{server.port}",))
        with running_proxy(tmp_path, grant) as proxy, connect(proxy) as client:
            head = _tunnel(client, f"127.0.0.1:{server.port}")
        allowed = _allow(f"127.0.0.1:{server.port}")
        with running_proxy(tmp_path, allowed) as control_proxy, connect(control_proxy) as control:
            assert _tunnel(control, f"127.0.0.1:{server.port}").startswith(b"HTTP/1.1 200")
            assert read_all(control) == b"d"
    assert head.startswith(b"HTTP/1.1 403") and b"not permitted for agent probe-agent" in head
    assert server.accepted == 1


def test_malformed_requests_get_a_reason_and_a_record(tmp_path: Path) -> None:
    with running_proxy(tmp_path, _allow("127.0.0.1:9")) as proxy:
        with connect(proxy) as client:
            client.sendall(b"GET /relative HTTP/1.1\r\nHost: x\r\n\r\n")
            relative = read_all(client)
        with connect(proxy) as client:
            client.sendall(b"CONNECT nohostport HTTP/1.1\r\nHost: x\r\n\r\n")
            no_port = read_all(client)
        with connect(proxy) as client:
            client.sendall(b"GET http://127.0.0.1:9/ HTTP/1.1\r\n" + b"X: " + b"a" * 70000)
            huge = read_all(client)
    assert relative.startswith(b"HTTP/1.1 400") and b"absolute http:// URL" in relative
    assert no_port.startswith(b"HTTP/1.1 400") and b"port is missing" in no_port
    assert huge.startswith(b"HTTP/1.1 431")
    assert [r.outcome for r in proxy.records] == [EgressOutcome.INVALID] * 3


def test_a_client_that_never_names_a_destination_is_cut(tmp_path: Path) -> None:
    limits = ProxyLimits(handshake_timeout_seconds=0.5)
    with ByteServer(answer=1) as server:
        with running_proxy(tmp_path, _allow(f"127.0.0.1:{server.port}"), limits=limits) as proxy:
            with connect(proxy) as silent:
                assert read_all(silent) == b""  # the proxy hangs up on its own
            with connect(proxy) as control:
                assert _tunnel(control, f"127.0.0.1:{server.port}").startswith(b"HTTP/1.1 200")
                assert read_all(control) == b"d"
        silent_record, control_record = proxy.records
    assert silent_record.outcome is EgressOutcome.INVALID
    assert "named no destination within 0.5 s" in silent_record.reason
    assert control_record.outcome is EgressOutcome.CLOSED


def test_a_destination_that_stalls_is_cut_at_the_idle_limit(tmp_path: Path) -> None:
    limits = ProxyLimits(idle_timeout_seconds=0.5)
    with ByteServer(stall=7) as stalling, ByteServer(answer=7) as prompt:
        grant = _allow(f"127.0.0.1:{stalling.port}", f"127.0.0.1:{prompt.port}")
        with running_proxy(tmp_path, grant, limits=limits) as proxy:
            with connect(proxy) as client:
                _tunnel(client, f"127.0.0.1:{stalling.port}")
                assert read_all(client) == b"s" * 7  # then the proxy closes
            with connect(proxy) as control:
                _tunnel(control, f"127.0.0.1:{prompt.port}")
                assert read_all(control) == b"d" * 7
        cut, closed = proxy.records
    assert cut.outcome is EgressOutcome.CUT and "idle limit" in cut.reason
    assert cut.bytes_down == 7
    assert closed.outcome is EgressOutcome.CLOSED and closed.bytes_down == 7


def test_an_endless_body_is_cut_at_the_byte_limit(tmp_path: Path) -> None:
    limits = ProxyLimits(max_bytes_per_connection=1_000_000)
    with ByteServer(answer=3_000_000) as endless, ByteServer(answer=999_000) as small:
        grant = _allow(f"127.0.0.1:{endless.port}", f"127.0.0.1:{small.port}")
        with running_proxy(tmp_path, grant, limits=limits) as proxy:
            with connect(proxy) as client:
                _tunnel(client, f"127.0.0.1:{endless.port}")
                assert len(read_all(client)) == 1_000_000
            with connect(proxy) as control:
                _tunnel(control, f"127.0.0.1:{small.port}")
                assert len(read_all(control)) == 999_000
        cut, closed = proxy.records
    assert cut.outcome is EgressOutcome.CUT and "1000000 bytes" in cut.reason
    assert cut.bytes_down == 1_000_000
    assert closed.outcome is EgressOutcome.CLOSED and closed.bytes_down == 999_000


def test_stopping_the_proxy_cuts_open_connections_and_records_them(tmp_path: Path) -> None:
    with ByteServer(stall=1) as stalling:
        with running_proxy(tmp_path, _allow(f"127.0.0.1:{stalling.port}")) as proxy:
            client = connect(proxy)
            _tunnel(client, f"127.0.0.1:{stalling.port}")
            assert client.recv(1) == b"s"
        client.close()
        (record,) = proxy.records
    assert record.outcome is EgressOutcome.CUT and "call ended" in record.reason


def _closed_as_the_proxy_stops(tmp_path: Path, settle_seconds: float) -> ConnectionRecord:
    """The record of a connection whose client closes 0.1 s after the proxy begins to
    stop. Its destination answers once the client has sent all it will send (its close),
    as a keep-alive HTTP server does: the close reaches the proxy just after the call
    ends."""
    with ByteServer(expect=10**9, answer=3) as server:
        with running_proxy(tmp_path, _allow(f"127.0.0.1:{server.port}")) as proxy:
            proxy.stop_settle_seconds = settle_seconds
            client = connect(proxy)
            _tunnel(client, f"127.0.0.1:{server.port}")
            closing = threading.Timer(0.1, lambda: client.shutdown(socket.SHUT_WR))
            closing.start()
            proxy.stop()
            closing.join()
            client.close()
        (record,) = proxy.records
    return record


def test_a_connection_its_client_closes_as_the_call_ends_is_recorded_closed(
    tmp_path: Path,
) -> None:
    record = _closed_as_the_proxy_stops(tmp_path, 10)  # generous: the machine may be loaded
    assert record.outcome is EgressOutcome.CLOSED, record
    assert record.bytes_down == 3


def test_without_the_settle_the_same_connection_is_cut(tmp_path: Path) -> None:
    # The control: the same close, when the proxy cuts at once, is recorded as cut.
    record = _closed_as_the_proxy_stops(tmp_path, 0)
    assert record.outcome is EgressOutcome.CUT and "call ended" in record.reason
