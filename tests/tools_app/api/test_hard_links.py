"""A hard link planted in a workspace: read_file and shell_command both refuse it.

The link names a file outside the workspace that the sandbox user could read.
Through the public API and a real worker: read_file refuses it, and
shell_command refuses to start ``cat`` while it is there, so the outside file's
content reaches the agent through neither. Positive controls: a plain file is
read by both, and once the link is removed with delete_file the shell runs again.
(code_runner, which the default config keeps from this agent, is tested with the
namespace sandbox in ``tests/tools_app/builtin/code/test_tools.py``.)
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.tools_app.api.conftest import AgentClient

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SECRET = "outside-the-workspace-" + uuid.uuid4().hex


def done(client: AgentClient, tool: str, arguments: dict[str, Any]) -> Any:
    response = client.call(tool, arguments, wait=30)
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["status"] not in ("pending_approval", "queued", "running"), answer
    return answer


def test_read_file_and_shell_command_both_refuse_a_planted_hard_link(
    make_agent: Callable[..., AgentClient], celery_worker_process: Any, var_dir: Path
) -> None:
    client = make_agent("elevated", autonomy="full")
    workspace = Path(client.agent.workspace)
    outside = var_dir / f"outside-{uuid.uuid4().hex}.txt"
    outside.write_text(SECRET)
    outside.chmod(0o644)  # readable by the sandbox user: only the refusal keeps it out
    os.link(outside, workspace / "planted.txt")
    (workspace / "plain.txt").write_text("plain content")
    try:
        read = done(client, "read_file", {"path": "planted.txt"})
        assert read["status"] == "failed", read
        assert "hard link" in read["error"]["message"]
        assert SECRET not in str(read)

        shell = done(client, "shell_command", {"argv": ["cat", "planted.txt"]})
        assert shell["status"] == "failed", shell
        assert "hard link" in shell["error"]["message"] and "planted.txt" in str(shell)
        assert SECRET not in str(shell)
        # Any command, not only one naming the file: it could be read indirectly.
        other = done(client, "shell_command", {"argv": ["cat", "plain.txt"]})
        assert other["status"] == "failed" and SECRET not in str(other), other

        # Positive controls: the plain file is read by read_file, and by cat once
        # the link is gone (delete_file removes it).
        plain = done(client, "read_file", {"path": "plain.txt"})
        assert plain["status"] == "succeeded" and "plain content" in plain["result"]["content"]
        removed = done(client, "delete_file", {"path": "planted.txt"})
        assert removed["status"] == "succeeded", removed
        cat = done(client, "shell_command", {"argv": ["cat", "plain.txt"]})
        assert cat["status"] == "succeeded", cat
        assert "plain content" in cat["result"]["content"]

    finally:
        outside.unlink()
