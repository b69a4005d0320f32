"""An MCP call that waits for a person outlasts the read timeouts of stock clients.

The Python SDK with a plain ``httpx2.AsyncClient()`` (the httpx the SDK speaks; its
default timeouts are 5 s, reads included) once lost every call that waited longer than
5 s: nothing was written while a person decided. Each test here calls as the supervised
demo agent, whose write waits for a person who approves through the operators' REST
endpoint 12 s later (``LatePerson`` of test_waits), and the call completes: answered as
JSON (no progressToken) or as an event stream (with one).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from common.testing import run_fresh
from tests.acceptance.conftest import Console
from tests.acceptance.mcp_calls import approval_of, read_back, text_of
from tests.acceptance.test_waits import SUPERVISED_AGENT, LatePerson, late_person  # noqa: F401

STOCK_READ_TIMEOUT = 5.0


def test_control_a_plain_client_times_out_reads_at_5s() -> None:
    """The client of the tests below is the stock one: 5 s for every read."""
    assert httpx2.AsyncClient().timeout.read == STOCK_READ_TIMEOUT
    assert httpx.AsyncClient().timeout.read == STOCK_READ_TIMEOUT


@asynccontextmanager
async def _plain_session(console: Console, agent: str) -> AsyncIterator[Any]:
    token = console.credentials.agents[agent]
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    async with (
        http,
        streamable_http_client(console.base_url + "/mcp/", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _ids_of(operator: httpx.Client, path: str) -> Callable[[], list[str]]:
    """The invocation id of the agent's pending write of ``path``, once listed."""

    def find() -> list[str]:
        return [approval_of(operator, "write_file", path)["invocation"]["id"]]

    return find


def _call_waiting(
    console: Console, operator: httpx.Client, person: LatePerson, *, with_progress: bool
) -> tuple[Any, list[float], str]:
    path = f"mcp-wait-{uuid.uuid4().hex[:8]}.txt"
    person.approve_later(_ids_of(operator, path))
    seen: list[float] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(done)

    async def main() -> Any:
        async with _plain_session(console, SUPERVISED_AGENT) as session:
            return await session.call_tool(
                "write_file",
                {"path": path, "content": "approved late\n"},
                progress_callback=progress if with_progress else None,
            )

    result = run_fresh(main)
    person.join()
    return result, seen, path


def test_a_plain_sdk_client_waits_for_a_person_who_approves_after_12s(
    console: Console,
    operator: httpx.Client,
    late_person: LatePerson,  # noqa: F811
) -> None:
    result, _, path = _call_waiting(console, operator, late_person, with_progress=False)
    assert result.is_error is False, text_of(result)
    assert result.meta["synthorg/status"] == "succeeded"
    assert len(late_person.decided) == 1
    assert "approved late" in text_of(read_back(console, SUPERVISED_AGENT, path))


def test_a_plain_sdk_client_with_progress_waits_for_a_person_who_approves_after_12s(
    console: Console,
    operator: httpx.Client,
    late_person: LatePerson,  # noqa: F811
) -> None:
    result, seen, path = _call_waiting(console, operator, late_person, with_progress=True)
    assert result.is_error is False, text_of(result)
    assert result.meta["synthorg/status"] == "succeeded"
    assert seen, "progress notifications reached the client while it waited"
    assert "approved late" in text_of(read_back(console, SUPERVISED_AGENT, path))
