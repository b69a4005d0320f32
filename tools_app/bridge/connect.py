"""One client session with an upstream MCP server, through the official ``mcp`` SDK.

stdio: the sandboxed command line of ``launch``. http: Streamable HTTP through the SSRF
guard: the host is resolved once, every address checked, the connection pinned to the
checked address (TLS verified against the name), and nothing else is reached (a
redirect elsewhere fails). A private address (loopback included) is reached only when the
entry's ``network`` names it as IP:port. The entry's ``secrets`` become request headers
(the shared grant, each use audited: a call's values from ``credentials``, which also
redacts them from its result; discovery's from the broker here). Each answer is bounded: a JSON
body or one streamed event past ``SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES`` is cut and the
request fails, so an endless body never fills the worker's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import httpx2 as httpx
import mcp_types as types
import structlog
from django.conf import settings
from django.db import close_old_connections, connections
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from common.config.mcp import McpServer
from common.config.sandbox import SandboxingConfig
from tools_app.bridge.credentials import placeholders
from tools_app.bridge.definitions import UpstreamTool
from tools_app.bridge.launch import Launch, stdio_launch
from tools_app.bridge.stderr import StderrTail
from tools_app.egress.decision import explicit_address_entries
from tools_app.net.guard import CheckedEndpoint, EgressGuard
from tools_app.net.pinned_request import pin_request
from tools_app.net.policy import EgressPolicy

OnListChanged = Callable[[], Awaitable[None]]
log = structlog.get_logger("synthorg.bridge")


class ResponseTooLargeError(httpx.StreamError):
    """An upstream answer grew past the response cap; the rest was not read."""


class _CappedStream(httpx.AsyncByteStream):
    """A response body that fails once it passes ``limit`` bytes."""

    def __init__(self, inner: Any, *, limit: int, where: str) -> None:
        self._inner = inner
        self._limit = limit
        self._where = where

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ResponseTooLargeError(
                    f"the answer of the MCP server at {self._where} passed {self._limit} bytes "
                    "(SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES); the rest was not read"
                )
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class PinnedAsyncTransport(httpx.AsyncBaseTransport):
    """Sends every request to the guard's pinned address of one host and port."""

    def __init__(self, endpoint: CheckedEndpoint, *, max_response_bytes: int) -> None:
        self.endpoint = endpoint
        self.max_response_bytes = max_response_bytes
        # retries=0: a retry must never be a way around the guard's single resolution.
        self._inner = httpx.AsyncHTTPTransport(verify=True, retries=0)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        endpoint = self.endpoint
        pin_request(
            request,
            endpoint,
            lambda host, port: (
                f"the MCP server {endpoint.host}:{endpoint.port} may not send the "
                f"console to {host}:{port}"
            ),
        )
        response = await self._inner.handle_async_request(request)
        # A streamed answer is bounded per event by the MCP client (max_sse_event_size); a
        # stream stays open for the session's life, so its total is not capped here.
        if not response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            response.stream = _CappedStream(
                response.stream, limit=self.max_response_bytes, where=self.endpoint.host
            )
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def http_egress_policy(server: McpServer) -> EgressPolicy:
    """The guard's policy for an http server: public addresses, and the private ones its
    ``network`` names as IP:port."""
    return EgressPolicy.build(trusted=explicit_address_entries(server.network))


def http_client_for(
    server: McpServer,
    guard: EgressGuard | None = None,
    *,
    headers: Mapping[str, str] | None = None,
) -> httpx.AsyncClient:
    """An httpx client that reaches only ``server.url``'s checked address."""
    guard = guard or EgressGuard(http_egress_policy(server))
    checked = guard.check_url(str(server.url))
    return httpx.AsyncClient(
        transport=PinnedAsyncTransport(
            checked.endpoint, max_response_bytes=settings.SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES
        ),
        headers=dict(headers or {}),
        follow_redirects=False,
        timeout=httpx.Timeout(server.timeout_seconds, read=server.timeout_seconds),
    )


class ServerSecretsRefusedError(Exception):
    """The server's secrets cannot be given to it; the reason names none of them."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _server_headers_now(server: McpServer) -> dict[str, str]:
    from secrets_app.broker import (
        SecretNotGrantedError,
        SecretUnavailableError,
        secrets_for_server,
    )

    close_old_connections()
    try:
        return secrets_for_server(agent=None, server=server.name, credentials=server.secrets)
    except SecretNotGrantedError:
        raise ServerSecretsRefusedError(
            "it is configured with a secret the server may not use (no such secret, or no "
            "grant of it to the server for every agent); an admin grants secrets to the "
            "server on the secrets page. It was not reached without it."
        ) from None
    except SecretUnavailableError:
        raise ServerSecretsRefusedError(
            "a secret it needs cannot be read now; an admin must check the secrets keys. It "
            "was not reached without it."
        ) from None
    finally:
        # An executor thread of a loop that may end with the listing: its connection goes
        # now rather than when the thread is collected (CONN_MAX_AGE keeps it otherwise).
        connections.close_all()


async def server_headers(server: McpServer) -> dict[str, str]:
    """``{header: value}`` of an http server's ``secrets`` (granted to every agent), or
    ServerSecretsRefusedError in words that name no secret; for a shared stdio server,
    ``{variable: value}`` the same way."""
    if not server.secrets:
        return {}
    return await asyncio.get_running_loop().run_in_executor(None, _server_headers_now, server)


def _handler(on_list_changed: OnListChanged | None) -> Any:
    # The listing runs as a task of its own: awaited here, it would wait for an answer that
    # the session's receive loop (which is running this handler) can no longer deliver.
    pending: set[asyncio.Task[None]] = set()

    async def relist() -> None:
        assert on_list_changed is not None
        try:
            await on_list_changed()
        except Exception as exc:
            log.warning("bridge_relist_failed", error=str(exc))

    async def handle(message: Any) -> None:
        if on_list_changed is not None and isinstance(message, types.ToolListChangedNotification):
            task = asyncio.ensure_future(relist())
            pending.add(task)
            task.add_done_callback(pending.discard)

    return handle


@contextlib.asynccontextmanager
async def open_session(
    server: McpServer,
    *,
    workspace: Path | None,
    sandboxing: SandboxingConfig,
    on_list_changed: OnListChanged | None = None,
    stderr: StderrTail | None = None,
    egress_dir: Path | None = None,
    secret_env: Mapping[str, str] | None = None,
    secret_values: Iterable[str] = (),
    on_launch: Callable[[Launch], None] | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialised session; the server (or connection) goes when the block ends.

        stdio: ``egress_dir`` gives the server its egress proxy (else no network),
        ``secret_env`` its variables for its secrets (placeholders: the proxy adds the
        values, ``credentials``), ``stderr`` keeps the tail of what it writes there (else it
        is discarded; ``secret_values`` are redacted from it), ``on_launch`` is told how it was
    started (its ceilings, what stopped it). http: ``secret_env`` holds
        the values of its header secrets (asked of the broker when None)."""
    async with contextlib.AsyncExitStack() as stack:
        if server.transport == "stdio":
            if secret_env is None:
                # Discovery and health checks list a server with no value anywhere: its
                # variables hold the placeholders, and no proxy adds anything.
                secret_env = placeholders(server)
            launch = stdio_launch(
                server, workspace=workspace, config=sandboxing,
                egress_dir=egress_dir, secret_env=secret_env,
            )  # fmt: skip
            stack.callback(launch.cleanup)
            if on_launch is not None:
                on_launch(launch)
            params = StdioServerParameters(
                command=launch.argv[0], args=launch.argv[1:], env=launch.env, cwd="/"
            )
            if stderr is not None:
                stderr.redact(secret_values)
                # Closed however the start ends: the tail ends with the server.
                stack.callback(stderr.spawned)
                errlog = stderr.open()
            else:
                errlog = stack.enter_context(open("/dev/null", "w"))  # noqa: SIM115
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            if stderr is not None:
                stderr.spawned()
        else:
            # A call brings its values (asked of the broker with its invocation); the
            # listing of discovery and health checks asks for the shared grant here.
            headers = dict(secret_env) if secret_env is not None else await server_headers(server)
            http = await stack.enter_async_context(http_client_for(server, headers=headers))
            read, write = await stack.enter_async_context(
                streamable_http_client(
                    str(server.url),
                    http_client=http,
                    max_sse_event_size=settings.SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES,
                )
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
