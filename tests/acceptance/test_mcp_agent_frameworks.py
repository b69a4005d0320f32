"""Stock MCP clients wait as long as a person takes, set up as the README says.

Two stock clients call the supervised demo agent's write at once, on the console `make
run` starts, and a person approves both 40 s later through the operators' REST endpoint:

- the openai-agents SDK's ``MCPServerStreamableHttp``, used as an Agent would use it
  (``connect()``, then ``call_tool``; no model is needed for that), with the
  ``client_session_timeout_seconds`` the README's MCP section names;
- the official Python SDK over a plain ``httpx2.AsyncClient()``, as the SDK's docstring
  suggests: every timeout at its 5 s default, reads included, so only the gateway's
  keep-alive holds the answer open.

The control: openai-agents as it comes (5 s for a whole request) loses a call that waits
for a person, as the README warns.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import httpx2
import pytest
from agents.mcp import MCPServerStreamableHttp
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT

from common.testing import BASE_DIR, run_fresh
from tests.acceptance.conftest import Console
from tests.acceptance.mcp_calls import (
    approval_of,
    invocation_of,
    late_approval,
    read_back,
    text_of,
)

SUPERVISED_AGENT = "ops-bot"
# A person reading the request takes this long (below the gateway's 50 s wait).
PERSON_DELAY = 40.0
# Long enough to outlast the stock openai-agents timeout; the control needs no more.
CONTROL_PERSON_DELAY = 10.0
STOCK_SECONDS = 5.0


def readme_session_timeout() -> float:
    """The ``client_session_timeout_seconds`` the README's MCP section tells openai-agents
    users to set."""
    readme = (BASE_DIR / "README.md").read_text()
    section = readme.split("\n### MCP gateway\n", 1)[1].split("\n### ", 1)[0]
    found = re.search(
        r"MCPServerStreamableHttp\([^`]*client_session_timeout_seconds=(\d+)", section
    )
    assert found, "the README's MCP section names no client_session_timeout_seconds"
    return float(found.group(1))


class Person:
    """An operator who approves the agent's writes of ``paths`` ``delay`` s after all of
    them are asked (sleeping as a person reads; not a measurement)."""

    def __init__(self, operator: httpx.Client, paths: list[str], delay: float) -> None:
        self.operator = operator
        self.paths = paths
        self.delay = delay
        self.asked: list[dict[str, Any]] = []
        self.answers: list[httpx.Response] = []
        self.failures: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, name="operator", daemon=True)

    def _run(self) -> None:
        try:
            self.asked = [approval_of(self.operator, "write_file", p) for p in self.paths]
            time.sleep(self.delay)
            self.answers.extend(late_approval(self.operator, row["id"]) for row in self.asked)
        except BaseException as exc:  # re-raised by the test
            self.failures.append(exc)

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self._thread.join(120)
        assert not self._thread.is_alive(), "the person never got to decide"
        if self.failures:
            raise self.failures[0]


def _agents_server(console: Console, **settings: Any) -> MCPServerStreamableHttp:
    """openai-agents' Streamable HTTP server for the supervised agent."""
    token = console.credentials.agents[SUPERVISED_AGENT]
    return MCPServerStreamableHttp(
        params={"url": console.base_url + "/mcp/", "headers": {"Authorization": f"Bearer {token}"}},
        **settings,
    )


async def _agents_call(server: MCPServerStreamableHttp, path: str) -> Any:
    await server.connect()
    try:
        return await server.call_tool("write_file", {"path": path, "content": "openai-agents\n"})
    finally:
        await server.cleanup()


async def _plain_sdk_call(console: Console, path: str) -> Any:
    token = console.credentials.agents[SUPERVISED_AGENT]
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    assert http.timeout.read == STOCK_SECONDS  # a plain client, nothing raised
    async with (
        http,
        streamable_http_client(console.base_url + "/mcp/", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.call_tool("write_file", {"path": path, "content": "python sdk\n"})


def _succeeded(console: Console, result: Any, path: str, content: str) -> None:
    assert result.is_error is False, text_of(result)
    assert result.meta["synthorg/status"] == "succeeded", result.meta
    assert content in text_of(read_back(console, SUPERVISED_AGENT, path))


def _run_with_person(person: Person, main: Callable[[], Any]) -> Any:
    person.start()
    try:
        return run_fresh(main)
    finally:
        person.join()


def test_openai_agents_and_a_plain_sdk_client_wait_40s_for_a_person(
    console: Console, operator: httpx.Client
) -> None:
    tag = uuid.uuid4().hex[:8]
    agents_path, sdk_path = f"agents-{tag}.txt", f"sdk-{tag}.txt"
    server = _agents_server(console, client_session_timeout_seconds=readme_session_timeout())
    person = Person(operator, [agents_path, sdk_path], PERSON_DELAY)

    async def main() -> tuple[Any, Any]:
        return await asyncio.gather(
            _agents_call(server, agents_path), _plain_sdk_call(console, sdk_path)
        )

    from_agents, from_sdk = _run_with_person(person, main)
    assert [answer.status_code for answer in person.answers] == [200, 200], [
        answer.text for answer in person.answers
    ]
    _succeeded(console, from_agents, agents_path, "openai-agents")
    _succeeded(console, from_sdk, sdk_path, "python sdk")


def test_control_openai_agents_as_it_comes_loses_a_call_that_waits_for_a_person(
    console: Console, operator: httpx.Client
) -> None:
    path = f"agents-stock-{uuid.uuid4().hex[:8]}.txt"
    server = _agents_server(console)
    assert server.client_session_timeout_seconds == STOCK_SECONDS
    person = Person(operator, [path], CONTROL_PERSON_DELAY)

    async def main() -> MCPError:
        with pytest.raises(MCPError) as raised:
            await _agents_call(server, path)
        return raised.value

    error = _run_with_person(person, main)
    assert error.code == REQUEST_TIMEOUT, error
    # The client gave up on the call, which withdrew it: the person comes too late.
    (answer,) = person.answers
    assert answer.status_code == 409, answer.text
    invocation = invocation_of(console, SUPERVISED_AGENT, person.asked[0]["invocation"]["id"])
    assert invocation["status"] == "cancelled", invocation
    assert read_back(console, SUPERVISED_AGENT, path).is_error is True
