"""An MCP server written with the official SDK for the bridge tests (stdio).

Tools: ``echo`` (read-only), ``note`` (writes a file in /workspace), ``slow`` (sleeps,
for timeouts and cancellation; records that it was cancelled), ``crash`` (the process
exits mid-call), ``fail`` (an error result with the server's message).
"""

import asyncio
import os
import sys
from pathlib import Path

# The system interpreter runs this inside the sandbox; the SDK comes from the directory
# the test names (the suite's own site-packages, bound read-only).
sys.path.insert(0, sys.argv[1])

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

server = MCPServer("bridge-test-tools")
WORKSPACE = Path("/workspace")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def note(name: str, text: str) -> str:
    """Write a note into the workspace."""
    (WORKSPACE / name).write_text(text)
    return f"wrote {name}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def slow(seconds: float, marker: str) -> str:
    """Sleep, then answer; the call leaves a marker file when it starts and one when cancelled."""
    (WORKSPACE / f"started-{marker}").write_text("1")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        (WORKSPACE / f"cancelled-{marker}").write_text("1")
        raise
    return f"slept {seconds}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_path(path: str) -> str:
    """Read any path this process can see (no checks of its own: the sandbox is the wall)."""
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise ToolError(f"{exc.strerror}: {path}") from exc


@server.tool()
def crash() -> str:
    """Exit the process in the middle of the call."""
    os._exit(3)


@server.tool()
def fail(why: str) -> str:
    """Fail with the given message."""
    raise ToolError(f"upstream says no: {why}")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def whoami() -> str:
    """What the server sees of its sandbox: uid, workspace listing, network."""
    import socket

    try:
        socket.create_connection(("1.1.1.1", 53), timeout=1).close()
        network = "reachable"
    except OSError as exc:
        network = f"unreachable ({exc.__class__.__name__})"
    entries = sorted(p.name for p in WORKSPACE.iterdir())
    return f"uid={os.getuid()} workspace={entries} network={network}"


if __name__ == "__main__":
    server.run()
