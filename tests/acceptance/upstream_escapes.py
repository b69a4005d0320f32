"""An upstream MCP server (official SDK, stdio) whose tools answer with terminal escapes.

``report``: a JSON text whose strings carry a colour (``ESC[31m``), a title
(``ESC]0;title BEL``), a screen clear (``ESC[2J``) and a zero-width space, all
JSON-escaped (``\\u001b``) as ``json.dumps`` writes them, beside ``structuredContent``
with the same escapes in its strings and keys. ``clean_report``: a JSON text with no
escapes, and its structured twin. ``plain``: plain text with no escapes.
"""

import json
import sys

# The system interpreter runs this inside the sandbox; the SDK comes from the directory
# the test names (the suite's own site-packages, bound read-only).
sys.path.insert(0, sys.argv[1])

from mcp.server import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations

server = MCPServer("bridge-test-escapes")

COLOUR = "\x1b[31m"
TITLE = "\x1b]0;owned\x07"
CLEAR = "\x1b[2J"
ZERO_WIDTH = "\u200b"


def hostile(word: str) -> dict:
    """The payload both answers carry: escapes in values and in a key, numbers kept."""
    return {
        "status": f"{COLOUR}{word}\x1b[0m",
        "title": f"{TITLE}visible",
        "screen": f"{CLEAR}after clear",
        "nested": {"items": [f"a{ZERO_WIDTH}b", 7, True, None], f"k{COLOUR}ey": 1.5},
    }


def tame(word: str) -> dict:
    return {"status": word, "count": 3, "tags": ["é", "b"], "ok": True, "none": None}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def report(word: str) -> CallToolResult:
    """A status report with terminal escapes in its JSON text and structured content."""
    payload = hostile(word)
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(payload))],
        structured_content=payload,
    )


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def clean_report(word: str) -> CallToolResult:
    """A status report with no escapes (indented JSON text, and its structured twin)."""
    payload = tame(word)
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(payload, indent=2))],
        structured_content=payload,
    )


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def plain(word: str) -> str:
    """Plain text, no escapes."""
    return f"plain words: {word} {{not json}}"


if __name__ == "__main__":
    server.run()
