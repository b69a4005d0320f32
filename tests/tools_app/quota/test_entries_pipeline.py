"""The workspace's entry limit through the public API, against a real daphne and worker.

The module starts its own pair with ``sandboxing.workspace_quota_entries: 100``
(and the byte quota at its default, far away) and rules that approve the tools it
calls. A script that makes more empty files than the limit leaves room for is
undone and the call fails naming the limit; the control beside it, a script that
stays under the limit, keeps its files; write_file meets the same limit.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.pipeline import pipeline_fixtures
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tools_app.quota.usage import workspace_usage

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
LIMIT = 100
REDIS_DB = 6
CONFIG: dict[str, Any] = {
    "sandboxing": {"workspace_quota_entries": LIMIT},
    "approval": {
        "rules": [
            {"name": f"entries-{tool}", "match": {"tool": tool}, "disposition": "auto_approve"}
            for tool in ("write_file", "shell_command")
        ]
    },
}


pipeline, daphne_server, _settled = pipeline_fixtures("entries-pipeline", CONFIG, redis_db=REDIS_DB)


def called(agent: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = agent.call(tool, arguments, wait=60)
    assert response.status_code in (200, 201), response.text
    answer: dict[str, Any] = response.json()
    assert answer["status"] in ("succeeded", "failed"), answer
    return answer


def touch_script(workspace: Path, prefix: str, count: int) -> None:
    """``script.sh`` making ``count`` empty files (names spelled out: no expansion)."""
    script = workspace / "script.sh"
    script.write_text("touch " + " ".join(f"{prefix}{i}" for i in range(count)) + "\n")
    os.chmod(script, 0o644)


def test_many_empty_files_are_held_to_the_entry_limit(
    make_agent: Callable[..., AgentClient],
) -> None:
    agent = make_agent("elevated", autonomy="full")
    workspace = Path(agent.agent.workspace)
    touch_script(workspace, "kept", 30)
    control = called(agent, "shell_command", {"argv": ["sh", "script.sh"]})
    assert control["status"] == "succeeded", control
    assert len(list(workspace.glob("kept*"))) == 30
    before = workspace_usage(workspace).entries

    touch_script(workspace, "many", 300)
    answer = called(agent, "shell_command", {"argv": ["sh", "script.sh"]})
    assert answer["status"] == "failed", answer
    message = answer["error"]["message"]
    assert "QUOTA_EXCEEDED" in message, answer
    assert f"over its limit of {LIMIT} entries (sandboxing.workspace_quota_entries)" in message
    assert f"{LIMIT - before} were free before it" in message
    assert workspace_usage(workspace).entries <= LIMIT
    assert len(list(workspace.glob("kept*"))) == 30  # what was there stays


def test_write_file_meets_the_entry_limit_too(make_agent: Callable[..., AgentClient]) -> None:
    agent = make_agent("elevated", autonomy="full")
    workspace = Path(agent.agent.workspace)
    written = called(agent, "write_file", {"path": "first.txt", "content": "fits"})
    assert written["status"] == "succeeded", written  # control
    held = workspace_usage(workspace).entries
    for i in range(LIMIT - held):
        (workspace / f"filler{i}").touch()
    assert workspace_usage(workspace).entries == LIMIT
    refused = called(agent, "write_file", {"path": "one-more.txt", "content": "no room"})
    assert refused["status"] == "failed", refused
    assert "sandboxing.workspace_quota_entries" in refused["error"]["message"], refused
    assert not (workspace / "one-more.txt").exists()
    # Replacing a file adds no entry: it still works at the limit.
    replaced = called(agent, "write_file", {"path": "first.txt", "content": "replaced"})
    assert replaced["status"] == "succeeded", replaced
    assert (workspace / "first.txt").read_text() == "replaced"
