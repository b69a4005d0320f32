"""A long-lived proxy (a warm MCP server's) hands over its records as it goes.

Each drain takes the connections that ended since the last one, exactly once; the
proxy keeps serving between drains, and ``stop`` returns only what was not drained.
"""

from __future__ import annotations

import socket
from pathlib import Path

from tests.tools_app.egress.servers import ByteServer, connect, read_all, read_head, running_proxy
from tools_app.egress import EgressOutcome, NetworkGrant


def _tunnel(client: socket.socket, target: str) -> bytes:
    client.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    return read_head(client)


def test_drain_takes_each_ended_connection_once_while_the_proxy_keeps_serving(
    tmp_path: Path,
) -> None:
    with ByteServer(expect=10, answer=20) as allowed, ByteServer(answer=1) as other:
        grant = NetworkGrant(mode="allowlist_only", allowed_hosts=(f"127.0.0.1:{allowed.port}",))
        with running_proxy(tmp_path, grant) as proxy:
            with connect(proxy) as client:
                assert _tunnel(client, f"127.0.0.1:{allowed.port}").startswith(b"HTTP/1.1 200")
                client.sendall(b"u" * 10)
                assert read_all(client) == b"d" * 20
            first, unrecorded = proxy.drain()
            # The proxy still serves after a drain: a refusal, then nothing left over.
            with connect(proxy) as client:
                assert _tunnel(client, f"127.0.0.1:{other.port}").startswith(b"HTTP/1.1 403")
                read_all(client)  # the proxy closes once the refusal is recorded
            second, _ = proxy.drain()
            assert proxy.drain() == ([], 0)
        left = proxy.stop()
    assert unrecorded == 0
    assert [(r.outcome, r.port, r.bytes_up, r.bytes_down) for r in first] == [
        (EgressOutcome.CLOSED, allowed.port, 10, 20)
    ]
    assert [(r.outcome, r.port) for r in second] == [(EgressOutcome.REFUSED, other.port)]
    assert left == [], "stop returns only what no drain took"
    assert other.accepted == 0
