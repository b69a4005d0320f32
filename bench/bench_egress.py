"""Egress proxy overhead, measured from inside one namespace sandbox (loopback only).

Figures: one 64 KB answer per new connection (the size of a typical HTTPS exchange)
through the proxy (forwarder on the sandbox's loopback, unix socket, proxy, the
host's loopback) vs direct to a server on the sandbox's own loopback, p50/p95;
and the throughput of one 50 MB download through the proxy vs direct.
Prints one JSON object per figure. Bounded: fixed counts, one sandbox run.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import lower_pct as pct
from tools_app.egress import LocalEgressGateway, NetworkGrant
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.protocol import Limits, NetworkPolicy, SandboxSpec, WorkspaceMount

STARTS = 30
SMALL = 64 * 1024
LARGE = 50 * 1024 * 1024
RUNS = 200
MIB = 1024 * 1024

INSIDE = r"""
import json, socket, sys, threading, time
SMALL, LARGE, RUNS, HOST_PORT = (int(a) for a in sys.argv[1:5])

def serve(listener):
    while True:
        conn, _ = listener.accept()
        with conn:
            wanted = int(conn.recv(64).split(b"\n")[0])
            block = b"x" * 65536
            while wanted > 0:
                conn.sendall(block[: min(wanted, 65536)])
                wanted -= 65536

local = socket.socket()
local.bind(("127.0.0.1", 0))
local.listen(64)
threading.Thread(target=serve, args=(local,), daemon=True).start()
LOCAL_PORT = local.getsockname()[1]

def via_proxy(size):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(f"CONNECT 127.0.0.1:{HOST_PORT} HTTP/1.1\r\nHost: b\r\n\r\n".encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += s.recv(1)
    return s

def direct(size):
    return socket.create_connection(("127.0.0.1", LOCAL_PORT))

def fetch(opener, size):
    s = opener(size)
    s.sendall(f"{size}\n".encode())
    got = 0
    while got < size:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        got += len(chunk)
    s.close()
    assert got == size, (got, size)

out = {}
for name, opener in (("proxy", via_proxy), ("direct", direct)):
    samples = []
    for _ in range(RUNS):
        t = time.perf_counter()
        fetch(opener, SMALL)
        samples.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    fetch(opener, LARGE)
    out[name] = {"samples": samples, "large_seconds": time.perf_counter() - t}
print(json.dumps(out))
"""


def host_server() -> tuple[socket.socket, int]:
    """The host's loopback server: answers ``N\\n`` with N bytes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)

    def one(conn: socket.socket) -> None:
        with conn:
            wanted = int(conn.recv(64).split(b"\n")[0])
            block = b"x" * 65536
            while wanted > 0:
                conn.sendall(block[: min(wanted, 65536)])
                wanted -= 65536

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return listener, int(listener.getsockname()[1])


def main() -> None:
    listener, port = host_server()
    gateway = LocalEgressGateway(agent_name="bench")
    grant = NetworkGrant(mode="allowlist_only", allowed_hosts=(f"127.0.0.1:{port}",))
    with tempfile.TemporaryDirectory(prefix="synthorg-bench-") as tmp:
        os.chmod(tmp, 0o755)  # the sandbox user enters it
        with gateway.session(grant) as egress:
            spec = SandboxSpec(
                argv=("python3", "-c", INSIDE, str(SMALL), str(LARGE), str(RUNS), str(port)),
                workspace=WorkspaceMount(Path(tmp)),
                timeout_seconds=300,
                limits=Limits(output_bytes=4 * MIB),
                network=NetworkPolicy.PROXY,
                egress_dir=egress.directory,
            )
            result = NamespaceSandbox().run(spec)
    listener.close()
    if result.exit_code != 0:
        raise SystemExit(f"the sandboxed bench failed: {result.stderr[-2000:]}")
    data = json.loads(result.stdout)
    proxy, direct = data["proxy"]["samples"], data["direct"]["samples"]
    note = f"{RUNS} new connections, 64 KB each, from one namespace sandbox"
    for name, samples in (("through proxy", proxy), ("direct (sandbox loopback)", direct)):
        print(
            json.dumps(
                {
                    "figure": f"egress: 64 KB request {name}",
                    "unit": "ms",
                    "p50": pct(samples, 0.5),
                    "p95": pct(samples, 0.95),
                    "note": note,
                }
            )
        )
    print(
        json.dumps(
            {
                "figure": "egress: added latency of the proxy (64 KB)",
                "unit": "ms",
                "p50": pct(proxy, 0.5) - pct(direct, 0.5),
                "p95": pct(proxy, 0.95) - pct(direct, 0.95),
                "note": "proxy minus direct, same percentile",
            }
        )
    )
    for name, shown in (("proxy", "through proxy"), ("direct", "direct")):
        seconds = data[name]["large_seconds"]
        print(
            json.dumps(
                {
                    "figure": f"egress: 50 MB download {shown}",
                    "unit": "MB/s",
                    "rate": LARGE / MIB / seconds,
                    "note": f"{seconds:.2f} s for one connection",
                }
            )
        )


def start_cost() -> None:
    """``python3 -c pass`` in the namespace sandbox with the proxy (session and forwarder)
    vs without network: what granting network adds to every call."""
    backend = NamespaceSandbox()
    gateway = LocalEgressGateway(agent_name="bench")
    grant = NetworkGrant(mode="open")
    samples: dict[str, list[float]] = {"without network": [], "with the egress proxy": []}
    with tempfile.TemporaryDirectory(prefix="synthorg-bench-") as tmp:
        os.chmod(tmp, 0o755)  # the sandbox user enters it
        plain = SandboxSpec(argv=("python3", "-c", "pass"), workspace=WorkspaceMount(Path(tmp)))
        for _ in range(STARTS):
            started = time.perf_counter()
            backend.run(plain)
            samples["without network"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            with gateway.session(grant) as egress:
                backend.run(
                    SandboxSpec(
                        argv=plain.argv,
                        workspace=plain.workspace,
                        network=NetworkPolicy.PROXY,
                        egress_dir=egress.directory,
                    )
                )
            samples["with the egress proxy"].append((time.perf_counter() - started) * 1000)
    for name, values in samples.items():
        print(
            json.dumps(
                {
                    "figure": f"egress: namespace call `python3 -c pass` {name}",
                    "unit": "ms",
                    "p50": pct(values, 0.5),
                    "p95": pct(values, 0.95),
                    "note": f"{STARTS} calls each, alternating",
                }
            )
        )


if __name__ == "__main__":
    main()
    start_cost()
