"""An MCP server (official SDK, stdio) for the bridge's network and secrets tests.

Tools: ``fetch`` (an HTTP GET with urllib, which honours the proxy variables),
``fetch_with`` (the same with a bearer token from an environment variable),
``connect`` (a raw TCP connect that ignores them: the bypass attempt), ``hold`` (a
tunnel left open after the call), ``env`` (one
environment variable, plain and base64: a server careless with its credentials) and
``env_later`` (the same after a pause: a call still running when a secret rotates),
``processes`` (many children at once: a server held to its process ceiling) and
``hold_memory`` (memory filled and kept, by the server or its children: a server held
to its memory ceiling), ``die`` (last words on standard error, then the process ends)
and ``flood`` (one endless message on the wire to the client).
"""

import base64
import hashlib
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request

# The system interpreter runs this inside the sandbox; the SDK comes from the directory
# the test names (the suite's own site-packages, bound read-only).
sys.path.insert(0, sys.argv[1])

from mcp.server import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("bridge-test-net")
READ = ToolAnnotations(read_only_hint=True)


@server.tool(annotations=READ)
def fetch(url: str) -> str:
    """GET the URL; say what came back or why not."""
    try:
        with urllib.request.urlopen(url, timeout=20) as answer:
            return f"GOT {answer.status} {answer.read().decode()}"
    except urllib.error.HTTPError as exc:
        return f"REFUSED {exc.code} {exc.reason}"
    except (urllib.error.URLError, OSError) as exc:
        return f"FAILED {exc}"


@server.tool(annotations=READ)
def fetch_with(url: str, variable: str) -> str:
    """GET the URL with ``Authorization: Bearer $variable`` (a server using its credential)."""
    request = urllib.request.Request(
        url, headers={"Authorization": f"Bearer {os.environ.get(variable, '')}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return f"GOT {answer.status} {answer.read().decode()}"
    except urllib.error.HTTPError as exc:
        return f"REFUSED {exc.code} {exc.reason}"
    except (urllib.error.URLError, OSError) as exc:
        return f"FAILED {exc}"


@server.tool(annotations=READ)
def connect(host: str, port: int) -> str:
    """Open a TCP connection directly, ignoring the proxy variables."""
    try:
        socket.create_connection((host, port), timeout=5).close()
        return "DIRECT REACHED"
    except OSError as exc:
        return f"DIRECT BLOCKED {exc.__class__.__name__}"


HELD: list[socket.socket] = []


@server.tool(annotations=READ)
def hold(host: str, port: int, expect: int) -> str:
    """Open a tunnel through the proxy (HTTP CONNECT), read ``expect`` bytes, and keep the
    connection open after the call returns (a server's connection outliving its call)."""
    proxy = os.environ["http_proxy"].removeprefix("http://")
    proxy_host, proxy_port = proxy.rsplit(":", 1)
    tunnel = socket.create_connection((proxy_host, int(proxy_port)), timeout=20)
    tunnel.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += tunnel.recv(1)
    got = b""
    while len(got) < expect:
        got += tunnel.recv(expect - len(got))
    HELD.append(tunnel)
    return f"HOLDING {head.split(b' ')[1].decode()} after {len(got)} bytes"


@server.tool(annotations=READ)
def env(name: str) -> str:
    """One environment variable, plain and base64-encoded, and its SHA-256 (which the
    test compares, knowing the value, to see that it arrived)."""
    value = os.environ.get(name)
    if value is None:
        return f"{name} is not set"
    digest = hashlib.sha256(value.encode()).hexdigest()
    return f"{name}={value} base64={base64.b64encode(value.encode()).decode()} sha256={digest}"


@server.tool(annotations=READ)
async def env_later(name: str, seconds: float) -> str:
    """``env`` after ``seconds``, as the variable was when the call started."""
    import anyio

    before = env(name)
    await anyio.sleep(seconds)
    return before


@server.tool(annotations=READ)
def processes(count: int) -> str:
    """Start ``count`` sleeping children at once (a server forking too much); say how many
    started and why the next did not, then end them."""
    import subprocess

    started: list[subprocess.Popen[bytes]] = []
    refused = ""
    for _ in range(count):
        try:
            started.append(subprocess.Popen(["/bin/sleep", "60"]))
        except OSError as exc:
            refused = f" REFUSED {exc.errno}"
            break
    for child in started:
        child.kill()
        child.wait()
    return f"STARTED {len(started)}{refused}"


HOLDING: list[bytearray] = []
FILL = """
import sys
held = [bytearray(b"\\x01") * (8 << 20) for _ in range(int(sys.argv[1]) // 8)]
print("FULL", flush=True)
sys.stdin.read()
"""


def _first_line(child: "subprocess.Popen[bytes]") -> str:
    assert child.stdout is not None
    return child.stdout.readline().decode().strip() or "ENDED"


@server.tool(annotations=READ)
def hold_memory(megabytes: int, children: int = 0) -> str:
    """Fill ``megabytes`` MiB, 8 at a time, and keep them (a server that leaks); with
    ``children``, that many children fill as much each, all at once, and say so."""
    if children:
        argv = [sys.executable, "-c", FILL, str(megabytes)]
        started = [
            subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            for _ in range(children)
        ]
        said = [_first_line(child) for child in started]
        for child in started:
            child.kill()
            child.wait()
        return " ".join(said)
    try:
        for _ in range(megabytes // 8):
            HOLDING.append(bytearray(b"\x01") * (8 << 20))
    except MemoryError:
        HOLDING.clear()
        return "REFUSED MemoryError"
    return f"HELD {megabytes}"


def _wire() -> int:
    """The pipe the SDK answers on (it moves it off descriptor 1, then pointed at 2)."""
    import fcntl

    diverted = os.readlink("/proc/self/fd/2")
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        except OSError:
            continue
        if fd > 2 and target.startswith("pipe:") and target != diverted and flags & os.O_WRONLY:
            return fd
    raise RuntimeError("no wire")


@server.tool(annotations=READ)
def flood(kilobytes: int) -> str:
    """Write ``kilobytes`` KiB of 'A' straight to the wire, then a newline: one message."""
    fd = _wire()
    chunk = b"A" * 1024
    for _ in range(kilobytes):
        os.write(fd, chunk)
    os.write(fd, b"\n")
    return f"FLOODED {kilobytes}"


@server.tool(annotations=READ)
def die(words: str) -> str:
    """Write ``words`` to standard error and end the process in the middle of the call."""
    sys.stderr.write(words + "\n")
    sys.stderr.flush()
    os._exit(3)


if __name__ == "__main__":
    server.run()
