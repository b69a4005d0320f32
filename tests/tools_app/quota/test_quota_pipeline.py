"""The workspace quota through the public API, against a real daphne and worker.

The module starts its own pair with ``sandboxing.workspace_quota: 1m`` and rules
that approve the tools it calls, so every call runs at once. An agent fills its
workspace with ``write_file`` and with ``sh script.sh`` (``yes > f``, ``dd``, many
files); the control beside each is a write under the quota that succeeds and stays.
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
QUOTA = 1024 * 1024
REDIS_DB = 9
CONFIG: dict[str, Any] = {
    "sandboxing": {"workspace_quota": "1m"},
    "approval": {
        "rules": [
            {"name": f"quota-{tool}", "match": {"tool": tool}, "disposition": "auto_approve"}
            for tool in ("write_file", "shell_command")
        ]
    },
}
SERIES = " ".join(str(i) for i in range(1, 41))
FILL_SCRIPTS = {
    "yes": "yes > endless.txt\n",
    "dd": "dd if=/dev/zero of=big.bin bs=64k count=100\n",
    "many files": f"for i in {SERIES}; do head -c 100000 /dev/zero > part$i; done\n",
}


pipeline, daphne_server, _settled = pipeline_fixtures("quota-pipeline", CONFIG, redis_db=REDIS_DB)


def called(agent: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = agent.call(tool, arguments, wait=60)
    assert response.status_code in (200, 201), response.text
    answer: dict[str, Any] = response.json()
    assert answer["status"] in ("succeeded", "failed"), answer
    return answer


def test_write_file_again_and_again_stops_at_the_quota(
    make_agent: Callable[..., AgentClient],
) -> None:
    agent = make_agent("elevated", autonomy="full")
    workspace = Path(agent.agent.workspace)
    chunk = "x" * 300_000
    for i in range(3):  # control: 900 kB fit in 1 MiB
        written = called(agent, "write_file", {"path": f"f{i}.txt", "content": chunk})
        assert written["status"] == "succeeded", written
    refused = called(agent, "write_file", {"path": "f3.txt", "content": chunk})
    assert refused["status"] == "failed", refused
    assert refused["error"]["code"] == "LIMIT_EXCEEDED"
    assert "workspace_quota" in refused["error"]["message"]
    assert not (workspace / "f3.txt").exists()
    assert workspace_usage(workspace).total <= QUOTA


@pytest.mark.parametrize("attack", sorted(FILL_SCRIPTS))
def test_a_script_filling_the_workspace_is_stopped_under_the_quota(
    make_agent: Callable[..., AgentClient], attack: str
) -> None:
    agent = make_agent("elevated", autonomy="full")
    workspace = Path(agent.agent.workspace)
    script = workspace / "script.sh"
    script.write_text("head -c 200000 /dev/zero > fits.bin && echo written\n")
    os.chmod(script, 0o644)
    control = called(agent, "shell_command", {"argv": ["sh", "script.sh"]})
    assert control["status"] == "succeeded", control
    assert (workspace / "fits.bin").stat().st_size == 200000

    script.write_text(FILL_SCRIPTS[attack])
    answer = called(agent, "shell_command", {"argv": ["sh", "script.sh"]})
    # Stopped by the file-size limit at the quota, or undone after: either way it says so.
    assert answer["status"] == "failed", answer
    assert "QUOTA_EXCEEDED" in answer["error"]["message"], answer
    assert workspace_usage(workspace).total <= QUOTA
    assert (workspace / "fits.bin").stat().st_size == 200000
