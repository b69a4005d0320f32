"""Lists a test upstream server's tools through the official MCP client, as discovery would."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from common.testing import run_fresh
from tools_app.bridge.definitions import UpstreamTool

SERVERS = Path(__file__).with_name("upstream_servers.py")


def as_upstream(server: str, tool: object) -> UpstreamTool:
    """An UpstreamTool from one entry of a ``tools/list`` result (wire names, camelCase)."""
    wire = tool.model_dump(by_alias=True, exclude_none=True, mode="json")  # type: ignore[attr-defined]
    return UpstreamTool(
        server=server,
        name=wire["name"],
        title=wire.get("title"),
        description=wire.get("description", ""),
        input_schema=wire.get("inputSchema", {}),
        output_schema=wire.get("outputSchema"),
        annotations=wire.get("annotations", {}),
    )


def listings(server: str, kind: str, times: int = 1) -> list[list[UpstreamTool]]:
    """``times`` successive ``tools/list`` answers of one run of the ``kind`` server."""

    async def main() -> list[list[UpstreamTool]]:
        params = StdioServerParameters(command=sys.executable, args=[str(SERVERS), kind])
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            answers = []
            for _ in range(times):
                result = await session.list_tools()
                answers.append([as_upstream(server, t) for t in result.tools])
            return answers

    return run_fresh(main)
