"""A remote MCP server over Streamable HTTP, written with the official SDK, for the bridge tests.

``python py_remote.py PORT OTHER_PORT FLAGS_DIR [TLS_PORT CERT KEY]`` serves, on 127.0.0.1:

- ``/mcp`` on PORT and OTHER_PORT: the tools below;
- ``/moved/mcp`` on PORT: a 307 redirect to ``/mcp`` on OTHER_PORT (another origin);
- ``/mcp`` on TLS_PORT (when given): the same tools behind a self-signed certificate.

Tools: ``echo`` (read-only), ``note`` (a write), ``slow`` (sleeps; leaves a marker file in
FLAGS_DIR when it starts and one when cancelled), ``api_key`` (answers the ``X-Api-Key``
header it received: a server that echoes its credential), ``big`` (a text of the given
size), ``flood`` (answered with a JSON body that, for any client, never ends), and
``grow``, ``reword``, ``drop``: add a tool, change a tool's description, remove a tool,
each followed by ``notifications/tools/list_changed``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from starlette.responses import RedirectResponse, StreamingResponse

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
READ = ToolAnnotations(read_only_hint=True)
FLOOD_CHUNK = b" " * 65536
# Far past any client's cap (256 MiB), yet it ends: a server left answering a client that
# hung up would otherwise spin forever.
FLOOD_CHUNKS = 4096

server = MCPServer("bridge-remote-tools")
flags = Path(sys.argv[3]) if len(sys.argv) > 3 else Path("/nonexistent")
notes: list[str] = []


@server.tool(annotations=READ)
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def note(text: str) -> str:
    """Keep a note on the server."""
    notes.append(text)
    return f"noted {len(notes)}: {text}"


@server.tool(annotations=READ)
async def slow(seconds: float, marker: str) -> str:
    """Sleep, then answer; leaves a marker file when it starts and one when cancelled."""
    (flags / f"started-{marker}").write_text("1")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        (flags / f"cancelled-{marker}").write_text("1")
        raise
    return f"slept {seconds}"


@server.tool(annotations=READ)
def api_key(ctx: Context) -> str:
    """The X-Api-Key header this request carried."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", {})
    return f"my key is {headers.get('x-api-key', 'missing')}"


@server.tool(annotations=READ)
def big(size: int) -> str:
    """A text of ``size`` characters."""
    return "x" * size


@server.tool(annotations=READ)
def flood() -> str:
    """Answered by the endless body below, never by this."""
    return "unreachable"


def _grown(text: str) -> str:
    return f"grown: {text}"


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a read-only tool ``name`` and say the list changed."""
    server.add_tool(_grown, name=name, description="Say the text back, grown.", annotations=READ)
    await ctx.session.send_tool_list_changed()
    return f"grew {name}"


@server.tool()
async def reword(name: str, description: str, ctx: Context) -> str:
    """Give tool ``name`` another description and say the list changed."""
    server.remove_tool(name)
    server.add_tool(_grown, name=name, description=description, annotations=READ)
    await ctx.session.send_tool_list_changed()
    return f"reworded {name}"


@server.tool()
async def drop(name: str, ctx: Context) -> str:
    """Remove tool ``name`` and say the list changed."""
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    return f"dropped {name}"


def flood_guard(app: Any) -> Any:
    """Answer a ``tools/call`` of ``flood`` with an endless JSON body; pass the rest on."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if (
            isinstance(request, dict)
            and request.get("method") == "tools/call"
            and (request.get("params") or {}).get("name") == "flood"
        ):

            async def endless() -> AsyncIterator[bytes]:
                yield b'{"jsonrpc": "2.0", "id": ' + json.dumps(request["id"]).encode()
                for _ in range(FLOOD_CHUNKS):
                    yield FLOOD_CHUNK
                    await asyncio.sleep(0)

            response = StreamingResponse(endless(), media_type="application/json")
            await response(scope, receive, send)
            return
        replayed = False

        async def replay() -> MutableMapping[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return guarded


def build(other_port: int) -> Any:
    @server.custom_route("/moved/mcp", methods=["GET", "POST", "DELETE"])
    async def moved(request: Any) -> RedirectResponse:
        return RedirectResponse(f"http://127.0.0.1:{other_port}/mcp", status_code=307)

    # The guard passes the lifespan on: the MCP app's own runs its session manager.
    return flood_guard(server.streamable_http_app())


async def main() -> None:
    port, other_port = int(sys.argv[1]), int(sys.argv[2])
    app = build(other_port)
    configs = [
        uvicorn.Config(app, host="127.0.0.1", port=p, log_level="warning")
        for p in (port, other_port)
    ]
    if len(sys.argv) > 6:
        configs.append(
            uvicorn.Config(
                app, host="127.0.0.1", port=int(sys.argv[4]), log_level="warning",
                ssl_certfile=sys.argv[5], ssl_keyfile=sys.argv[6],
            )
        )  # fmt: skip
    servers = [uvicorn.Server(c) for c in configs]
    # Only the first runs the app's lifespan (one session manager for every port).
    for extra in servers[1:]:
        extra.config.lifespan = "off"
    await asyncio.gather(*(s.serve() for s in servers))


if __name__ == "__main__":
    asyncio.run(main())
