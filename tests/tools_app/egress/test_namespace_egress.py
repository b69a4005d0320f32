"""A namespace sandbox's only way out is the call's egress proxy (real bwrap, real sockets).

Each test runs one sandboxed command that tries the allowed thing and the attack
side by side, so every refusal stands next to a success in the same sandbox.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools_app.egress.servers import ByteServer
from tests.tools_app.net.servers import LoopbackDnsServer, LoopbackHttpServer, Reply, StaticResolver
from tests.tools_app.sandbox.backends.test_namespace import namespace_backend
from tools_app.egress import (
    ConnectionRecord,
    EgressDecider,
    EgressOutcome,
    NetworkGrant,
    egress_session,
)
from tools_app.net import Resolver
from tools_app.net.dnswire import TYPE_A, encode_query
from tools_app.sandbox.protocol import (
    MountMode,
    NetworkPolicy,
    Owner,
    SandboxBackend,
    SandboxResult,
    SandboxSpec,
    WorkspaceMount,
)


def run_with_egress(
    workspace: Path,
    grant: NetworkGrant,
    argv: tuple[str, ...],
    *,
    resolver: Resolver | None = None,
    backend: SandboxBackend | None = None,
    owner: Owner | None = None,
) -> tuple[SandboxResult, list[ConnectionRecord]]:
    """Run ``argv`` in a sandbox (namespace by default) whose egress proxy serves ``grant``."""
    backend = backend or namespace_backend()
    decider = EgressDecider(grant, agent_name="probe-agent", resolver=resolver)
    seen: list[ConnectionRecord] = []
    with egress_session(
        decider, on_records=lambda records, _unrecorded: seen.extend(records)
    ) as port:
        spec = SandboxSpec(
            argv=argv,
            workspace=WorkspaceMount(workspace, MountMode.READ_WRITE),
            timeout_seconds=60,
            network=NetworkPolicy.PROXY,
            egress_dir=port.directory,
            owner=owner,
        )
        result = backend.run(spec)
    return result, seen


def allow(*entries: str) -> NetworkGrant:
    return NetworkGrant(mode="allowlist_only", allowed_hosts=entries)


def test_curl_reaches_the_allowlisted_server_and_nothing_else(workspace: Path) -> None:
    with (
        LoopbackHttpServer() as web,
        LoopbackHttpServer() as other,
        LoopbackHttpServer("127.0.0.2") as hidden,
        LoopbackHttpServer("::1") as v6,
    ):
        web.route("/ok", Reply(body=b"allowed body"))
        script = "\n".join(
            [
                f"curl -sS -f --max-time 20 {web.url('/ok')}; echo ' allowed='$?",
                f"curl -sS -f --max-time 20 {other.url('/')} >/dev/null 2>&1; echo other=$?",
                f"curl -sS -f --max-time 20 {hidden.url('/')} >/dev/null 2>&1; echo hidden=$?",
                f"curl -sS -f --max-time 20 {v6.url('/')} >/dev/null 2>&1; echo v6=$?",
            ]
        )
        result, records = run_with_egress(
            workspace, allow(f"127.0.0.1:{web.port}"), ("sh", "-c", script)
        )
    assert "allowed body allowed=0" in result.stdout, result
    for name in ("other", "hidden", "v6"):
        assert f"{name}=0" not in result.stdout, result.stdout
    assert web.count("/ok") == 1
    assert other.count() == hidden.count() == v6.count() == 0
    by_port = {r.port: r for r in records}
    assert by_port[web.port].outcome is EgressOutcome.CLOSED
    for server in (other, hidden, v6):
        assert by_port[server.port].outcome is EgressOutcome.REFUSED


PYTHON_URLLIB = """
import sys, urllib.request, urllib.error
for url in sys.argv[1:]:
    try:
        with urllib.request.urlopen(url, timeout=20) as answer:
            print("GOT", url, answer.read().decode())
    except (urllib.error.URLError, OSError) as exc:
        print("REFUSED", url, exc)
"""


def test_python_urllib_uses_the_proxy_and_a_name_for_loopback_is_refused(
    workspace: Path,
) -> None:
    resolver = StaticResolver({"intranet.example.test": ("127.0.0.1",)})
    with LoopbackHttpServer() as web:
        web.route("/data", Reply(body=b"payload"))
        named = f"http://intranet.example.test:{web.port}/data"
        grant = allow(f"127.0.0.1:{web.port}", f"intranet.example.test:{web.port}")
        result, records = run_with_egress(
            workspace,
            grant,
            ("python3", "-c", PYTHON_URLLIB, web.url("/data"), named),
            resolver=resolver,
        )
    assert f"GOT {web.url('/data')} payload" in result.stdout, result
    assert f"REFUSED {named}" in result.stdout
    assert web.count("/data") == 1
    refused = [r for r in records if r.host == "intranet.example.test"]
    assert refused and refused[0].outcome is EgressOutcome.REFUSED
    assert "loopback range" in refused[0].reason


RAW_BYPASS = """
import socket, sys
port = int(sys.argv[1])
try:
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    print("DIRECT REACHED")
except OSError as exc:
    print("DIRECT BLOCKED", exc.errno)
for host in ("10.0.0.1", "192.0.2.1"):
    try:
        socket.create_connection((host, 80), timeout=3).close()
        print("REACHED", host)
    except OSError as exc:
        print("BLOCKED", host, exc.errno)
tunnel = socket.create_connection(("127.0.0.1", 3128), timeout=10)
tunnel.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n".encode())
head = b""
while not head.endswith(b"\\r\\n\\r\\n"):
    head += tunnel.recv(1)
print("PROXY", head.split(b"\\r\\n")[0].decode())
tunnel.sendall(b"u" * 1000)
got = b""
while True:
    chunk = tunnel.recv(65536)
    if not chunk:
        break
    got += chunk
print("RECEIVED", len(got))
"""


def test_raw_sockets_reach_nothing_but_the_proxy_counts_exact_bytes(workspace: Path) -> None:
    with ByteServer(expect=1000, answer=2500) as server:
        result, records = run_with_egress(
            workspace,
            allow(f"127.0.0.1:{server.port}"),
            ("python3", "-c", RAW_BYPASS, str(server.port)),
        )
    assert "DIRECT BLOCKED" in result.stdout, result
    assert "REACHED" not in result.stdout
    assert "PROXY HTTP/1.1 200 Connection established" in result.stdout
    assert "RECEIVED 2500" in result.stdout
    assert server.accepted == 1 and server.received == 1000
    (record,) = records
    assert (record.bytes_up, record.bytes_down) == (1000, 2500)


DNS_PROBE = """
import socket, sys
try:
    print("RESOLVED", socket.getaddrinfo("www.example.com", 80))
except OSError as exc:
    print("NO RESOLVER", exc)
query = bytes.fromhex(sys.argv[2])
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.settimeout(2)
try:
    udp.sendto(query, ("127.0.0.1", int(sys.argv[1])))
    print("ANSWER", len(udp.recv(512)))
except OSError as exc:
    print("NO ANSWER", exc)
"""


def test_a_dns_lookup_inside_reaches_no_resolver(workspace: Path) -> None:
    query = encode_query(0x1234, "probe.example.test", TYPE_A)
    with LoopbackDnsServer(lambda _n, _t, _s: ["192.0.2.7"]) as dns:
        result, records = run_with_egress(
            workspace,
            allow("127.0.0.1:9"),
            ("python3", "-c", DNS_PROBE, str(dns.port), query.hex()),
        )
        inside = dns.count("probe.example.test")
        # Control: the same datagram from outside the sandbox is answered.
        import socket

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.settimeout(5)
            udp.sendto(query, ("127.0.0.1", dns.port))
            assert udp.recv(512)
        assert dns.count("probe.example.test") == inside + 1
    assert "NO RESOLVER" in result.stdout, result
    assert "NO ANSWER" in result.stdout
    assert inside == 0
    assert records == []


def test_the_probe_says_the_proxy_runs() -> None:
    report = namespace_backend().probe()
    assert report.ok, report.reason
    assert str(report.details["egress_proxy"]).startswith("egress proxy runs"), report.details
    assert "egress proxy runs" in report.reason  # what /healthz shows for the backend


def test_the_subprocess_runner_refuses_the_proxy_rather_than_share_the_host_network(
    workspace: Path,
) -> None:
    from tools_app.sandbox.backends.subprocess import SubprocessSandbox
    from tools_app.sandbox.errors import SandboxUnavailableError

    spec = SandboxSpec(
        argv=("true",),
        workspace=WorkspaceMount(workspace),
        network=NetworkPolicy.PROXY,
        egress_dir=workspace,
    )
    with pytest.raises(SandboxUnavailableError, match="namespace and docker"):
        SubprocessSandbox().run(spec)
    control = SandboxSpec(argv=("true",), workspace=WorkspaceMount(workspace))
    assert SubprocessSandbox().run(control).exit_code == 0
