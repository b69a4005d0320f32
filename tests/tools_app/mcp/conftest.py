"""An MCP session with the official client against the real daphne server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from common.testing import run_fresh
from tests.tools_app.api import conftest as api_fixtures

# The agent API fixtures, shared with the API tests.
make_agent = api_fixtures.make_agent

T = TypeVar("T")


@asynccontextmanager
async def mcp_session(base_url: str, token: str, path: str = "/mcp/") -> AsyncIterator[Any]:
    """An initialized ClientSession speaking to the gateway with an agent token."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        http,
        streamable_http_client(base_url + path, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def with_mcp(
    base_url: str, token: str, work: Callable[[Any], Awaitable[T]], path: str = "/mcp/"
) -> T:
    """Run `work(session)` in a fresh event loop, from a synchronous test."""

    async def main() -> T:
        async with mcp_session(base_url, token, path) as session:
            return await work(session)

    return run_fresh(main)
