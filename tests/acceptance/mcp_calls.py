"""Helpers of the MCP acceptance tests: the people's and the agents' public doors."""

from __future__ import annotations

from typing import Any

import httpx

from common.testing import wait_until
from tests.acceptance.conftest import Console
from tests.acceptance.console import agent_client
from tests.tools_app.mcp.conftest import with_mcp


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def approval_of(
    operator: httpx.Client, tool: str, path: str, *, status: str = "pending"
) -> dict[str, Any]:
    """The approval request (in `status`) of the agent's call of `tool` on `path`."""
    found: list[dict[str, Any]] = []

    def listed() -> bool:
        answer = operator.get("/api/v1/approvals/", params={"status": status})
        assert answer.status_code == 200, answer.text
        for row in answer.json()["results"]:
            call = row["invocation"]
            if call["tool"] == tool and call["arguments"].get("path") == path:
                found.append(row)
                return True
        return False

    wait_until(listed, timeout=60, what=f"a {status} approval for {tool} {path}", poll=0.3)
    return found[-1]


def status_of(console: Console, agent: str, invocation_id: str) -> str:
    with console.agent(agent) as http:
        answer = http.get(f"/api/v1/invocations/{invocation_id}/")
        assert answer.status_code == 200, answer.text
        return str(answer.json()["status"])


def wait_status(console: Console, agent: str, invocation_id: str, status: str) -> None:
    wait_until(
        lambda: status_of(console, agent, invocation_id) == status,
        timeout=30,
        what=f"invocation {invocation_id} to be {status}",
        poll=0.3,
    )


def read_back(console: Console, agent: str, path: str) -> Any:
    """read_file of `path` over MCP, as the agent."""

    async def work(session: Any) -> Any:
        return await session.call_tool("read_file", {"path": path})

    return with_mcp(console.base_url, console.credentials.agents[agent], work)


def late_approval(operator: httpx.Client, request_id: str) -> httpx.Response:
    return operator.post(
        f"/api/v1/approvals/{request_id}/decide/", json={"decision": "approve", "reason": ""}
    )


def tools_listed(console: Console, agent: str = "build-bot") -> set[str]:
    """The tool names `GET /api/v1/tools/` gives ``agent``."""
    with console.agent(agent) as http:
        answer = http.get("/api/v1/tools/")
        assert answer.status_code == 200, answer.text
        return {t["name"] for t in answer.json()["tools"]}


def rest_call(
    console: Console, agent: str, tool: str, arguments: dict[str, Any], wait: int = 30
) -> Any:
    """``agent``'s call of ``tool`` over REST, waiting up to ``wait`` s; the invocation."""
    with agent_client(console.base_url, console.credentials.agents[agent]) as http:
        answer = http.post(
            "/api/v1/invocations/", json={"tool": tool, "arguments": arguments, "wait": wait}
        )
        assert answer.status_code in (200, 201), answer.text
        return answer.json()


def invocation_of(console: Console, agent: str, invocation_id: str) -> Any:
    """The invocation as ``agent`` reads it now."""
    with console.agent(agent) as http:
        return http.get(f"/api/v1/invocations/{invocation_id}/").json()
