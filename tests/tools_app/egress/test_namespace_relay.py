"""A proxied namespace call's network and relay, made by the spawn server before bubblewrap.

Real bwrap, the real spawn server, real sockets. The command runs itself (no
forwarder started inside), in a network namespace that is not the worker's, with
the relay on its loopback: outside the sandbox's pid namespace, as the sandbox
user, gone when the call ends. Each attack has its control beside it: the same
command with the forwarder started inside the sandbox.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tests.tools_app.egress.servers import ByteServer
from tests.tools_app.egress.test_namespace_egress import allow, run_with_egress
from tests.tools_app.sandbox.backends.test_namespace import namespace_backend
from tools_app.egress.mount import FORWARD_PORT
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.linux.cgroups import detect_cgroup_support
from tools_app.sandbox.linux.identity import resolve_identity
from tools_app.sandbox.protocol import Limits
from tools_app.sandbox.runner import ProcessOutcome, run_confined
from tools_app.sandbox.spawn.client import SpawnError

RELAY_NAME = "egress-relay"

# Prints the command's network namespace and every command line it can see.
LOOK_AROUND = r"""
readlink /proc/self/ns/net
for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f"; echo; done
"""

# Writes its network namespace where the test reads it, then waits for the test's go.
HOLD = r"""
readlink /proc/self/ns/net > /workspace/ns.tmp && mv /workspace/ns.tmp /workspace/ns
i=0; while [ ! -e /workspace/go ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
"""


def relays_in(namespace: str) -> list[int]:
    """Pids of egress relays whose network namespace is ``namespace``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
            if comm == RELAY_NAME and os.readlink(f"/proc/{entry}/ns/net") == namespace:
                found.append(int(entry))
        except OSError:
            continue
    return found


@pytest.fixture(params=["spawn server", "inside the sandbox"])
def relay(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def backend_for(relay: str) -> NamespaceSandbox:
    backend = namespace_backend()
    backend.loopback_relay = relay == "spawn server"
    return backend


def test_the_command_runs_itself_in_a_network_namespace_not_the_workers(
    workspace: Path, relay: str
) -> None:
    result, _ = run_with_egress(
        workspace, allow("127.0.0.1:9"), ("sh", "-c", LOOK_AROUND), backend=backend_for(relay)
    )
    assert result.exit_code == 0, result
    namespace, *commands = result.stdout.splitlines()
    assert namespace.startswith("net:[") and namespace != os.readlink("/proc/self/ns/net")
    forwarders = [line for line in commands if "forward.py" in line]
    if relay == "spawn server":
        # Nothing of the relay is visible inside: no forwarder, no other process.
        assert forwarders == [], commands
        assert not any("python" in line for line in commands), commands
    else:
        # Control: the forwarder started inside is seen there.
        assert forwarders, commands


def test_the_relay_lives_as_the_sandbox_user_for_the_call_and_ends_with_it(
    workspace: Path, relay: str
) -> None:
    seen: dict[str, object] = {}

    def watch() -> None:
        marker = workspace / "ns"
        for _ in range(400):
            if marker.exists():
                break
            time.sleep(0.025)
        seen["namespace"] = namespace = marker.read_text().strip()
        pids = relays_in(namespace)
        seen["pids"] = pids
        seen["uids"] = [os.stat(f"/proc/{pid}").st_uid for pid in pids]
        (workspace / "go").touch()

    watcher = threading.Thread(target=watch)
    watcher.start()
    result, _ = run_with_egress(
        workspace, allow("127.0.0.1:9"), ("sh", "-c", HOLD), backend=backend_for(relay)
    )
    watcher.join(30)
    assert result.exit_code == 0, result
    namespace = str(seen["namespace"])
    if relay == "spawn server":
        # While the call ran: one relay on its loopback, as the sandbox user.
        assert isinstance(seen["pids"], list) and len(seen["pids"]) == 1, seen
        user = resolve_identity(namespace_backend().run_as_user, backend="namespace")
        assert seen["uids"] == [user.uid]
    else:
        # Control: the forwarder inside is no process of this name outside.
        assert seen["pids"] == []
    # After the call: nothing of it is left.
    assert relays_in(namespace) == []


def test_a_raw_connection_to_the_worker_loopback_fails_and_the_relay_carries_bytes(
    workspace: Path, relay: str
) -> None:
    probe = (
        "import socket, sys\n"
        "port = int(sys.argv[1])\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', port), timeout=5).close()\n"
        "    print('DIRECT REACHED')\n"
        "except OSError as exc:\n"
        "    print('DIRECT BLOCKED', exc.errno)\n"
        f"tunnel = socket.create_connection(('127.0.0.1', {FORWARD_PORT}), timeout=10)\n"
        "tunnel.sendall(f'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'.encode())\n"
        "head = b''\n"
        "while not head.endswith(b'\\r\\n\\r\\n'):\n"
        "    head += tunnel.recv(1)\n"
        "tunnel.sendall(b'u' * 300)\n"
        "got = b''\n"
        "while chunk := tunnel.recv(65536):\n"
        "    got += chunk\n"
        "print('RECEIVED', len(got))\n"
    )
    with ByteServer(expect=300, answer=700) as server:
        result, records = run_with_egress(
            workspace,
            allow(f"127.0.0.1:{server.port}"),
            ("python3", "-c", probe, str(server.port)),
            backend=backend_for(relay),
        )
    assert "DIRECT BLOCKED" in result.stdout, result
    assert "RECEIVED 700" in result.stdout, result
    assert server.accepted == 1 and server.received == 300
    (record,) = records
    assert (record.bytes_up, record.bytes_down) == (300, 700)


def test_a_relay_that_cannot_be_loaded_starts_nothing(workspace: Path) -> None:
    backend = namespace_backend()
    identity = resolve_identity(backend.run_as_user, backend="namespace")
    marker = workspace / "ran"

    def run(relay_path: str) -> ProcessOutcome:
        return run_confined(
            ["sh", "-c", f"touch {marker}"],
            env={"PATH": "/usr/bin:/bin"},
            cwd=Path("/"),
            stdin=b"",
            timeout_seconds=30,
            limits=Limits(),
            identity=identity,
            cgroup_support=detect_cgroup_support(),
            kill_grace_seconds=0.5,
            exit_drain_seconds=0.2,
            loopback={"socket": str(workspace / "none.sock"), "port": FORWARD_PORT,
                      "relay": relay_path},
        )  # fmt: skip

    with pytest.raises(SpawnError, match="egress relay"):
        run(str(workspace / "missing-forwarder.py"))
    assert not marker.exists()
    # Control: the real relay, and the same command runs (in its own network).
    from tools_app.egress.mount import FORWARDER_SOURCE

    outcome = run(str(FORWARDER_SOURCE))
    assert outcome.exit_code == 0, outcome
    assert marker.exists()


# Two tunnels, one after the other. The first either asks for a refused destination and
# keeps sending while the proxy refuses and closes (``push``: the relay writes to a closed
# socket), or reads a little of a large answer and resets the connection while the relay
# is still writing to it (``reset``). The second reads all of its answer.
TWO_TUNNELS = r"""
import socket, struct, sys, time
mode, first_port, second_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def tunnel(port, body=b""):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n".encode() + body)
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        chunk = s.recv(1)
        if not chunk:
            break
        head += chunk
    return s, head.split(b"\r\n")[0].decode()

try:
    first, status = tunnel(first_port, b"p" * (4 << 20) if mode == "push" else b"")
    if mode == "reset":
        first.recv(1000)
        first.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        first.close()  # a reset, with most of the answer still on its way
    print("FIRST", status)
except OSError as exc:
    print("FIRST CUT", exc.errno)
time.sleep(0.5)
try:
    second, status = tunnel(second_port)
    got = 0
    while chunk := second.recv(1 << 20):
        got += len(chunk)
    print("SECOND", status, got)
except OSError as exc:
    print("SECOND FAILED", exc)
"""


def test_a_refused_tunnel_written_past_its_end_does_not_end_the_relay(
    workspace: Path, relay: str
) -> None:
    with ByteServer(answer=5000) as allowed, ByteServer() as refused:
        result, records = run_with_egress(
            workspace,
            allow(f"127.0.0.1:{allowed.port}"),
            ("python3", "-c", TWO_TUNNELS, "push", str(refused.port), str(allowed.port)),
            backend=backend_for(relay),
        )
    # The relay outlived the write to a closed socket: the second tunnel got its answer.
    assert "SECOND HTTP/1.1 200 Connection established 5000" in result.stdout, result
    assert refused.accepted == 0 and allowed.accepted == 1
    assert len(records) == 2


def test_a_client_that_resets_mid_answer_does_not_end_the_relay(
    workspace: Path, relay: str
) -> None:
    size = 8 * 1024 * 1024
    with ByteServer(answer=size) as server:
        port = str(server.port)
        result, records = run_with_egress(
            workspace,
            allow(f"127.0.0.1:{server.port}"),
            ("python3", "-c", TWO_TUNNELS, "reset", port, port),
            backend=backend_for(relay),
        )
    # The relay outlived the reset: the second tunnel got its whole answer.
    assert f"SECOND HTTP/1.1 200 Connection established {size}" in result.stdout, result
    assert server.accepted == 2
    assert len(records) == 2


# Run by a root process without CAP_SYS_ADMIN (a worker in a container): a proxied call.
WITHOUT_SYS_ADMIN = r"""
import json, sys
from pathlib import Path
from tools_app.egress import LocalEgressGateway, NetworkGrant
from tools_app.sandbox.backends import namespace, namespace_network
from tools_app.sandbox.protocol import MountMode, NetworkPolicy, SandboxSpec, WorkspaceMount

gateway = LocalEgressGateway(agent_name="capless")
grant = NetworkGrant(mode="allowlist_only", allowed_hosts=("127.0.0.1:9",))
look = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done"
results = []
for _ in range(2):
    with gateway.session(grant) as port:
        spec = SandboxSpec(
            argv=("sh", "-c", look),
            workspace=WorkspaceMount(Path(sys.argv[1]), MountMode.READ_WRITE),
            network=NetworkPolicy.PROXY, egress_dir=port.directory,
        )
        result = namespace.NamespaceSandbox().run(spec)
    results.append({"exit": result.exit_code, "forwarder": "forward.py" in result.stdout})
print(json.dumps({"results": results, "refused": namespace_network.network_namespaces.refused}))
"""


def test_a_root_worker_that_may_not_make_a_network_namespace_runs_the_forwarder_inside(
    workspace: Path,
) -> None:
    import json
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[3])

    def run(*prefix: str) -> dict[str, object]:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", WITHOUT_SYS_ADMIN, str(workspace)],
            capture_output=True, text=True, timeout=120, cwd=root, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        answer: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
        return answer

    # The attack on availability: CAP_SYS_ADMIN gone, as in a container. The first call
    # is refused its network namespace, runs with the forwarder inside, and so do the next.
    capless = run("setpriv", "--bounding-set=-sys_admin", "--")
    assert capless["results"] == [{"exit": 0, "forwarder": True}] * 2, capless
    assert "Operation not permitted" in str(capless["refused"])
    # The control: the same root worker with it makes the namespace and the relay itself.
    full = run()
    assert full == {"results": [{"exit": 0, "forwarder": False}] * 2, "refused": ""}, full
