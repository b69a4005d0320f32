"""A call stopped at its time limit ends ``timed_out``, through the public API.

The module starts its own daphne and worker with a file-tool timeout far below
what any sandboxed file operation takes, and rules that approve the tools it calls
so each runs at once. shell_command (its own ``timeout_seconds``), read_file,
write_file and git_status are stopped at their limits and end ``timed_out``; the
controls beside them, a command that exits non-zero and a file operation that
fails under the default timeout, stay ``failed``, and git_diff under the default
timeout succeeds.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.pipeline import pipeline_fixtures
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.builtin.git_fixtures import make_repo
from trust_app.models import AgentPermissions
from trust_app.services.agents import workspace_grant

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
REDIS_DB = 5
TINY_SECONDS = 0.001
TOOLS = ("shell_command", "read_file", "write_file", "list_directory", "git_status", "git_diff")
CONFIG: dict[str, Any] = {
    "tools": {
        "read_file": {"timeout_seconds": TINY_SECONDS},
        "write_file": {"timeout_seconds": TINY_SECONDS},
        "git_status": {"timeout_seconds": TINY_SECONDS},
    },
    "approval": {
        "rules": [
            {"name": f"timeout-{tool}", "match": {"tool": tool}, "disposition": "auto_approve"}
            for tool in TOOLS
        ]
    },
}


pipeline, daphne_server, _settled = pipeline_fixtures("timeout-pipeline", CONFIG, redis_db=REDIS_DB)


def terminal_agent(make: Callable[..., AgentClient]) -> AgentClient:
    client = make("elevated", autonomy="full")
    AgentPermissions.objects.create(agent=client.agent, sub_constraints={"terminal": "full"})
    return client


def called(agent: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = agent.call(tool, arguments, wait=60, idempotency_key=uuid.uuid4().hex)
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    assert answer["status"] not in ("pending_approval", "queued", "running"), answer
    return answer


def test_shell_command_past_its_timeout_ends_timed_out(
    make_agent: Callable[..., AgentClient],
) -> None:
    agent = terminal_agent(make_agent)
    answer = called(agent, "shell_command", {"argv": ["sleep", "20"], "timeout_seconds": 0.5})
    assert answer["status"] == "timed_out", answer
    assert answer["error"] is not None and answer["error"]["code"], answer
    assert answer["result"]["duration_ms"] < 15_000, answer

    # Controls: a command that fails on its own stays `failed`; one in time succeeds.
    failing = called(agent, "shell_command", {"argv": ["ls", "no-such-file"]})
    assert failing["status"] == "failed", failing
    assert failing["error"]["code"] == "NON_ZERO_EXIT", failing
    quick = called(agent, "shell_command", {"argv": ["sleep", "0"], "timeout_seconds": 20})
    assert quick["status"] == "succeeded", quick


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("read_file", {"path": "hello.txt"}), ("write_file", {"path": "new.txt", "content": "x"})],
)
def test_a_file_tool_past_its_timeout_ends_timed_out(
    make_agent: Callable[..., AgentClient], tool: str, arguments: dict[str, Any]
) -> None:
    agent = make_agent("elevated", autonomy="full")
    (Path(agent.agent.workspace) / "hello.txt").write_text("hello\n")
    answer = called(agent, tool, arguments)
    assert answer["status"] == "timed_out", answer
    assert f"{TINY_SECONDS:g} s" in str(answer), answer

    # Control: list_directory keeps the default timeout; a missing directory is `failed`.
    missing = called(agent, "list_directory", {"path": "no-such-directory"})
    assert missing["status"] == "failed", missing
    listed = called(agent, "list_directory", {"path": "."})
    assert listed["status"] == "succeeded", listed


def test_a_git_tool_past_its_timeout_ends_timed_out(
    make_agent: Callable[..., AgentClient],
) -> None:
    agent = make_agent("elevated", autonomy="full")
    workspace = Path(agent.agent.workspace)
    repo = make_repo(workspace / "proj")
    (repo / "README.md").write_text("changed by the agent\n")
    workspace_grant(workspace)
    answer = called(agent, "git_status", {"path": "proj"})
    assert answer["status"] == "timed_out", answer
    assert f"{TINY_SECONDS:g} s" in answer["error"]["message"], answer
    # Control: git_diff keeps the default timeout and answers.
    control = called(agent, "git_diff", {"path": "proj"})
    assert control["status"] == "succeeded", control
    assert "+changed by the agent" in control["result"]["content"]
