"""Many connections at once through the forwarder inside a real sandbox call.

``shell_command`` runs one Python client (a single thread, so the sandbox's process
ceiling is the forwarder's alone to spend) that holds ``max_connections`` tunnels
open at the same time through the sandbox's proxy variables, over HTTP CONNECT and
over SOCKS5, to the test's own loopback echo server on the allowlisted port. Every
tunnel carries its own bytes both ways while all are open; one more is refused with
the reason; after one closes, a new tunnel works again (the forwarder is alive).
"""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.tools_app.builtin.fs_fixtures import make_context
from tests.tools_app.sandbox.backends.docker.test_backend import SETTINGS
from tests.tools_app.sandbox.backends.test_namespace import namespace_backend
from tools_app.builtin.base import ToolContext
from tools_app.builtin.terminal import tools as terminal
from tools_app.egress import ConnectionRecord, EgressOutcome, LocalEgressGateway, ProxyLimits
from tools_app.sandbox.backends.docker.backend import DockerSandbox
from tools_app.sandbox.protocol import SandboxBackend

LIMIT = ProxyLimits().max_connections

CLIENT = r"""
import json, os, socket, sys, time

mode, host, port, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
proxy = os.environ["http_proxy" if mode == "connect" else "all_proxy"]
proxy_port = int(proxy.rsplit(":", 1)[1].strip("/"))
report = {"mode": mode, "opened": 0, "echoed": 0, "errors": []}


def head(sock):
    data = b""
    while not data.endswith(b"\r\n\r\n"):
        byte = sock.recv(1)
        if not byte:
            break
        data += byte
    return data.decode("latin-1")


def exactly(sock, count):
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            break
        data += chunk
    return data


def tunnel():
    # Returns (socket, None) when the tunnel is up, else (None, what the proxy said).
    try:
        sock = socket.create_connection(("127.0.0.1", proxy_port), timeout=30)
    except OSError as exc:
        return None, f"forwarder unreachable: {exc}"
    try:
        if mode == "connect":
            target = f"{host}:{port}"
            sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
            answer = head(sock)
            if answer.startswith("HTTP/1.1 200"):
                return sock, None
            sock.close()
            return None, answer
        sock.sendall(b"\x05\x01\x00")
        if exactly(sock, 2) != b"\x05\x00":
            sock.close()
            return None, "no SOCKS greeting"
        name = host.encode()
        sock.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + port.to_bytes(2, "big"))
        reply = exactly(sock, 10)
        if len(reply) == 10 and reply[1] == 0:
            return sock, None
        sock.close()
        return None, f"SOCKS reply {reply[1] if len(reply) > 1 else 'none'}"
    except OSError as exc:
        sock.close()
        return None, f"error {exc}"


def finish(sock):
    # Half-close and read to the end: the whole chain has closed when this returns.
    try:
        sock.shutdown(socket.SHUT_WR)
        while sock.recv(4096):
            pass
    except OSError:
        pass
    sock.close()


def echo(sock, word):
    sock.sendall(word + b"\n")
    return exactly(sock, len(word) + 1) == word + b"\n"


held = []
for number in range(limit):
    sock, said = tunnel()
    if sock is None:
        report["errors"].append([number, said])
        break
    held.append(sock)
report["opened"] = len(held)
# Every tunnel is open now; each carries its own bytes both ways.
for number, sock in enumerate(held):
    if echo(sock, f"{mode}-{number}".encode()):
        report["echoed"] += 1
extra, said = tunnel()
report["extra_refused"] = extra is None
report["extra_said"] = said
if extra is not None:
    finish(extra)
finish(held.pop())
# The close reaches the proxy a moment later: a client told to close one retries.
for attempt in range(50):
    again, said = tunnel()
    if again is not None:
        break
    time.sleep(0.1)
report["retries"] = attempt
report["after_close"] = again is not None and echo(again, b"again")
report["after_close_said"] = said
if again is not None:
    finish(again)
for sock in held:
    finish(sock)
print("REPORT " + json.dumps(report))
"""


class EchoServer:
    """Echoes every line back on each connection; counts the connections open at once."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(256)
        self._sock.settimeout(0.1)
        self.port = int(self._sock.getsockname()[1])
        self.accepted = 0
        self.open = 0
        self.most_open = 0
        self._lock = threading.Lock()
        self._done = threading.Event()
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
                self.open += 1
                self.most_open = max(self.most_open, self.open)
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(60)
        with conn:
            try:
                while data := conn.recv(4096):
                    conn.sendall(data)
            except OSError:
                pass
            # Counted closed before the close is sent: the client that reads the close
            # and opens the next one finds this one gone from the count.
            with self._lock:
                self.open -= 1

    def __enter__(self) -> EchoServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._done.set()
        self._thread.join(timeout=5)
        self._sock.close()


def _client(workspace: Path) -> str:
    """The client, as a script in the workspace (inline code is for code_runner)."""
    script = workspace / "tunnels.py"
    script.write_text(CLIENT)
    os.chmod(script, 0o644)
    return script.name


def _context(
    workspace: Path,
    seen: list[ConnectionRecord],
    port: int,
    backend: SandboxBackend | None = None,
) -> ToolContext:
    base = make_context(
        workspace,
        backend or namespace_backend(),
        settings={"allowed_commands": ["python3"], "timeout_seconds": 120},
        network="allowlist_only",
        allowed_hosts=[f"127.0.0.1:{port}"],
        terminal="full",
    )
    gateway = LocalEgressGateway(
        agent_name="tester", on_records=lambda records, _n: seen.extend(records)
    )
    return ToolContext(**{**{f: getattr(base, f) for f in base.__slots__}, "egress": gateway})


def _run(
    workspace: Path, mode: str, count: int, backend: SandboxBackend | None = None
) -> tuple[dict[str, Any], list[ConnectionRecord]]:
    seen: list[ConnectionRecord] = []
    with EchoServer() as server:
        context = _context(workspace, seen, server.port, backend)
        argv = ["python3", _client(workspace), mode, "127.0.0.1", str(server.port), str(count)]
        result = terminal.shell_command.run(context, {"argv": argv})
        most_open = server.most_open
    lines = [line for line in result.content.splitlines() if line.startswith("REPORT ")]
    assert lines, result.content
    report = json.loads(lines[-1].removeprefix("REPORT "))
    report["server_most_open"] = most_open
    return report, seen


def _assert_limit_held(report: dict[str, Any], seen: list[ConnectionRecord]) -> None:
    assert report["opened"] == LIMIT and not report["errors"], json.dumps(report)
    assert report["echoed"] == LIMIT, json.dumps(report)
    assert report["server_most_open"] == LIMIT, json.dumps(report)
    assert report["extra_refused"], json.dumps(report)
    assert report["after_close"], json.dumps(report)
    refused = [r for r in seen if r.outcome is EgressOutcome.REFUSED]
    # The extra tunnel, and each retry made before the closed one had left the proxy.
    assert len(refused) == 1 + report["retries"], seen
    for record in refused:
        assert f"more than {LIMIT} connections at once" in record.reason, record
        assert record.host == "127.0.0.1", record
    closed = [r for r in seen if r.outcome is EgressOutcome.CLOSED]
    assert len(closed) == LIMIT + 1, seen


def test_the_limit_of_connect_tunnels_is_held_open_and_the_next_is_refused_with_the_reason(
    workspace: Path,
) -> None:
    report, seen = _run(workspace, "connect", LIMIT)
    _assert_limit_held(report, seen)
    said = report["extra_said"]
    assert said.startswith("HTTP/1.1 503"), json.dumps(report)
    assert f"X-Synthorg-Egress: more than {LIMIT} connections at once" in said, json.dumps(report)


def test_the_docker_sandbox_holds_the_limit_of_connect_tunnels_too(
    docker_client: object, workspace: Path
) -> None:
    backend = DockerSandbox(SETTINGS)
    try:
        report, seen = _run(workspace, "connect", LIMIT, backend)
    finally:
        backend.close()
    _assert_limit_held(report, seen)
    assert report["extra_said"].startswith("HTTP/1.1 503"), json.dumps(report)


def test_the_limit_of_socks5_streams_is_held_open_and_the_next_is_refused(
    workspace: Path,
) -> None:
    report, seen = _run(workspace, "socks", LIMIT)
    _assert_limit_held(report, seen)
    assert report["extra_said"] == "SOCKS reply 1", json.dumps(
        report
    )  # general failure; reason audited


def test_a_few_tunnels_go_through_and_none_is_refused(workspace: Path) -> None:
    """The control: well under the limit, the same client meets no refusal."""
    seen: list[ConnectionRecord] = []
    with EchoServer() as server:
        context = _context(workspace, seen, server.port)
        argv = ["python3", _client(workspace), "connect", "127.0.0.1", str(server.port), "3"]
        result = terminal.shell_command.run(context, {"argv": argv})
    report = json.loads(result.content.split("REPORT ", 1)[1].splitlines()[0])
    assert (report["opened"], report["echoed"]) == (3, 3), json.dumps(report)
    # The fourth tunnel is not over the limit: it is opened, not refused.
    assert not report["extra_refused"] and report["after_close"], json.dumps(report)
    assert all(r.outcome is EgressOutcome.CLOSED for r in seen) and len(seen) == 5, seen
