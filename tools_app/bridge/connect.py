"""One client session with an upstream MCP server, through the official ``mcp`` SDK.

stdio: the sandboxed command line of ``launch``. http: Streamable HTTP through the SSRF
guard: the host is resolved once, every address checked, the connection pinned to the
checked address (TLS verified against the name), and nothing else is reached (a
redirect elsewhere fails).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import httpx2 as httpx
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from common.config.mcp import McpServer
from tools_app.bridge.definitions import UpstreamTool
from tools_app.bridge.launch import server_secret_env, stdio_launch
from tools_app.net.guard import CheckedEndpoint, EgressGuard
from tools_app.net.policy import EgressPolicy
from tools_app.net.transport import EgressPinMismatchError
from tools_app.sandbox.config import SandboxingConfig

OnListChanged = Callable[[], Awaitable[None]]


class PinnedAsyncTransport(httpx.AsyncBaseTransport):
    """Sends every request to the guard's pinned address of one host and port."""

    def __init__(self, endpoint: CheckedEndpoint) -> None:
        self.endpoint = endpoint
        # retries=0: a retry must never be a way around the guard's single resolution.
        self._inner = httpx.AsyncHTTPTransport(verify=True, retries=0)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        port = url.port or (443 if url.scheme == "https" else 80)
        if url.host != self.endpoint.host or port != self.endpoint.port:
            raise EgressPinMismatchError(
                f"the MCP server {self.endpoint.host}:{self.endpoint.port} may not send the "
                f"console to {url.host}:{port}"
            )
        request.headers.setdefault("Host", url.netloc.decode("ascii"))
        request.url = url.copy_with(host=self.endpoint.pinned_address)
        if url.scheme == "https":
            request.extensions = {**request.extensions, "sni_hostname": self.endpoint.host}
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def http_client_for(server: McpServer, guard: EgressGuard | None = None) -> httpx.AsyncClient:
    """An httpx client that reaches only ``server.url``'s checked address."""
    guard = guard or EgressGuard(EgressPolicy.build())
    checked = guard.check_url(str(server.url))
    return httpx.AsyncClient(
        transport=PinnedAsyncTransport(checked.endpoint),
        headers=server_secret_env(server),
        follow_redirects=False,
        timeout=httpx.Timeout(server.timeout_seconds, read=server.timeout_seconds),
    )


def _handler(on_list_changed: OnListChanged | None) -> Any:
    async def handle(message: Any) -> None:
        if on_list_changed is not None and isinstance(message, types.ToolListChangedNotification):
            await on_list_changed()

    return handle


@contextlib.asynccontextmanager
async def open_session(
    server: McpServer,
    *,
    workspace: Path | None,
    sandboxing: SandboxingConfig,
    on_list_changed: OnListChanged | None = None,
    errlog: Any = None,
    egress_dir: Path | None = None,
    secret_env: Mapping[str, str] | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialised session; the server (or connection) goes when the block ends.

    stdio: ``egress_dir`` gives the server its egress proxy (else no network),
    ``secret_env`` its secrets' values (see ``launch``)."""
    async with contextlib.AsyncExitStack() as stack:
        if server.transport == "stdio":
            launch = stdio_launch(
                server, workspace=workspace, config=sandboxing,
                egress_dir=egress_dir, secret_env=secret_env,
            )  # fmt: skip
            stack.callback(launch.cleanup)
            params = StdioServerParameters(
                command=launch.argv[0], args=launch.argv[1:], env=launch.env, cwd="/"
            )
            devnull = stack.enter_context(open("/dev/null", "w"))  # noqa: SIM115
            read, write = await stack.enter_async_context(
                stdio_client(params, errlog=errlog or devnull)
            )
        else:
            http = await stack.enter_async_context(http_client_for(server))
            read, write = await stack.enter_async_context(
                streamable_http_client(str(server.url), http_client=http)
            )
        session = await stack.enter_async_context(
            ClientSession(read, write, message_handler=_handler(on_list_changed))
        )
        await session.initialize()
        yield session


async def list_upstream_tools(session: ClientSession, server: str) -> list[UpstreamTool]:
    """Every tool the server lists (all pages), as plain definitions."""
    tools: list[UpstreamTool] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        for tool in page.tools:
            annotations = (
                tool.annotations.model_dump(mode="json", exclude_none=True, by_alias=True)
                if tool.annotations is not None
                else {}
            )
            tools.append(
                UpstreamTool(
                    server=server,
                    name=tool.name,
                    title=tool.title,
                    description=tool.description or "",
                    input_schema=tool.input_schema,
                    output_schema=tool.output_schema,
                    annotations=annotations,
                )
            )
        cursor = page.next_cursor
        if not cursor:
            return tools
