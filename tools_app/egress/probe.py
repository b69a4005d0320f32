"""Does the egress proxy work through a backend here: a real sandboxed connection through it.

A listener of the probe's own on 127.0.0.1 is allowlisted by address and port;
a process in the sandbox connects to the forwarder on its own loopback, asks
for a tunnel, and must read the listener's greeting. Nothing leaves loopback.
"""

from __future__ import annotations

import socket
import tempfile
import threading
from pathlib import Path

from tools_app.egress.decision import NetworkGrant
from tools_app.egress.gateway import LocalEgressGateway
from tools_app.egress.mount import FORWARD_PORT
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import (
    Limits,
    NetworkPolicy,
    SandboxBackend,
    SandboxSpec,
    WorkspaceMount,
)

GREETING = b"synthorg-egress-probe"
_CLIENT = f"""
import socket, sys
s = socket.create_connection(("127.0.0.1", {FORWARD_PORT}), timeout=10)
s.sendall(("CONNECT 127.0.0.1:" + sys.argv[1] + " HTTP/1.1\\r\\nHost: probe\\r\\n\\r\\n").encode())
data = b""
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
print(data.decode("latin-1"))
"""


def _listener() -> tuple[socket.socket, threading.Thread]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(30)

    def greet() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            conn.sendall(GREETING)

    thread = threading.Thread(target=greet, name="egress-probe", daemon=True)
    thread.start()
    return server, thread


def probe_egress(backend: SandboxBackend) -> tuple[bool, str]:
    """(works, what happened) for one tunnel through ``backend``'s egress wiring."""
    server, thread = _listener()
    port = int(server.getsockname()[1])
    seen: list[str] = []
    gateway = LocalEgressGateway(
        agent_name="egress-probe",
        on_records=lambda records, _n: seen.extend(r.outcome.value for r in records),
    )
    grant = NetworkGrant(mode="allowlist_only", allowed_hosts=(f"127.0.0.1:{port}",))
    try:
        with tempfile.TemporaryDirectory(prefix="synthorg-probe-") as tmp:
            Path(tmp).chmod(0o755)  # the sandbox user must enter it
            with gateway.session(grant) as egress:
                spec = SandboxSpec(
                    argv=("python3", "-I", "-S", "-c", _CLIENT, str(port)),
                    workspace=WorkspaceMount(Path(tmp)),
                    timeout_seconds=30,
                    limits=Limits(),
                    network=NetworkPolicy.PROXY,
                    egress_dir=egress.directory,
                )
                result = backend.run(spec)
    except SandboxError as exc:
        return False, f"egress proxy not checked: {exc.reason}"
    finally:
        server.close()
        thread.join(timeout=5)
    if GREETING.decode() in result.stdout and seen == ["closed"]:
        return True, "egress proxy runs: a sandboxed process reached a loopback listener through it"
    detail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [
        f"exit {result.exit_code}"
    ]
    return False, f"egress proxy NOT working: {detail[0][:300]} (connections: {seen or 'none'})"
