"""An MCP server written with the official SDK, run from a code directory of its own.

Tools: ``echo`` (says the text back), ``refuse`` (an error result that carries
structured content, as a server says what went wrong), ``read_path`` (reads any path
this process can see: the sandbox is the wall).
"""

import sys
from pathlib import Path

# The system interpreter runs this inside the sandbox; the SDK comes from the directory
# the test names (the suite's own site-packages, bound read-only for this server).
sys.path.insert(0, sys.argv[1])

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

server = MCPServer("bridge-code-dir")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def refuse(item: str) -> CallToolResult:
    """Order an item; this shop has none, and says so with details."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"cannot order {item}: out of stock")],
        structured_content={"code": "out_of_stock", "item": item, "retry_after_seconds": 30},
        is_error=True,
    )


@server.tool()
def read_path(path: str) -> str:
    """Read a text file at the given path."""
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise ToolError(f"{exc.strerror}: {path}") from exc


if __name__ == "__main__":
    server.run()
