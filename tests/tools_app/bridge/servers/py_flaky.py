"""An MCP server (official SDK) that refuses to start while a flag file exists.

The test creates the flag to make the server vanish (its health check fails) and
removes it to bring it back.
"""

import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
FLAG = Path(sys.argv[2])

from mcp.server import MCPServer  # noqa: E402
from mcp_types import ToolAnnotations  # noqa: E402

server = MCPServer("bridge-test-flaky")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def ping() -> str:
    """Answer pong."""
    return "pong"


if __name__ == "__main__":
    if FLAG.exists():
        sys.exit("the flag says: down")
    server.run()
