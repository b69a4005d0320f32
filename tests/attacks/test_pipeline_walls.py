"""Through the public API and a real worker: a call whose path check lets it out
still meets the sandbox wall.

An agent whose file-system scope is ``full`` passes the first wall (its path
argument may be absolute); the file runner then runs in its private root,
where the console's files and other agents' workspaces do not exist. Control:
the same agent reads a file of its own workspace, and a system file, through
the same path.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import settings

from common.testing import RunningProcess
from tests.tools_app.api.conftest import AgentClient
from trust_app.models import AgentPermissions

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def read(agent: AgentClient, path: str, key: str) -> dict:
    response = agent.call("read_file", {"path": path}, idempotency_key=key, wait=60)
    assert response.status_code in (200, 201), response.text
    body = response.json()
    assert body["status"] not in ("pending_approval", "queued", "running"), body
    return body


def test_full_scope_reads_neither_the_console_nor_another_agent(
    celery_worker_process: RunningProcess, make_agent: Callable[..., AgentClient]
) -> None:
    attacker = make_agent("elevated", autonomy="full")
    victim = make_agent("elevated", autonomy="full")
    AgentPermissions.objects.update_or_create(
        agent=attacker.agent, defaults={"sub_constraints": {"file_system": "full"}}
    )
    own = Path(attacker.agent.workspace) / "mine.txt"
    own.write_text("my own work\n")
    own.chmod(0o664)
    theirs = Path(victim.agent.workspace) / "theirs.txt"
    theirs.write_text("another agent's work\n")
    theirs.chmod(0o664)
    secret_key = Path(settings.VAR_DIR) / "secret_key"
    assert secret_key.exists()

    mine = read(attacker, str(own), "own")
    assert mine["status"] == "succeeded", mine
    assert "my own work" in mine["result"]["content"]
    system = read(attacker, "/usr/lib/os-release", "system")
    assert system["status"] == "succeeded", system

    for key, target in (("theirs", theirs), ("secret", secret_key)):
        body = read(attacker, str(target), key)
        assert body["status"] == "failed", body
        text = (body["error"] or {}).get("message", "") + str(body["result"] or "")
        assert "does not exist" in text, body
        assert "another agent's work" not in str(body)
    assert theirs.read_text() == "another agent's work\n"
