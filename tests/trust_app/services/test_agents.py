"""agent_create: an agent created with its own cap on calls at once, or the console default,
and a workspace private to the console and the sandbox user."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import uuid
from pathlib import Path

import pytest

from audit_app.models import AuditEvent
from common.errors import InvalidArgumentError
from common.vocabulary.sandbox import DEFAULT_SANDBOX_USER
from trust_app.models import Agent
from trust_app.services.agents import agent_create

pytestmark = pytest.mark.django_db


def test_an_agent_is_created_with_the_console_default_unless_given_a_cap() -> None:
    plain = agent_create(name="plain", access_level="standard").agent
    capped = agent_create(name="capped", access_level="standard", max_concurrent_calls=10_000)
    assert Agent.objects.get(pk=plain.pk).max_concurrent_calls is None
    assert Agent.objects.get(pk=capped.agent.pk).max_concurrent_calls == 10_000
    created = AuditEvent.objects.get(kind="agent.created", agent_id=capped.agent.id)
    assert created.data["max_concurrent_calls"] == 10_000


@pytest.mark.parametrize("cap", [0, 10_001, "8", True])
def test_a_bad_cap_is_refused_naming_the_field_and_nothing_is_created(cap: object) -> None:
    before = AuditEvent.objects.count()
    with pytest.raises(InvalidArgumentError) as raised:
        agent_create(name="refused", access_level="standard", max_concurrent_calls=cap)  # type: ignore[arg-type]
    problems = raised.value.details["problems"]
    assert list(problems) == ["max_concurrent_calls"]
    assert "1 to 10000" in problems["max_concurrent_calls"]
    assert raised.value.message.startswith("max_concurrent_calls: ")
    assert not Agent.objects.filter(name="refused").exists()
    assert AuditEvent.objects.count() == before


@pytest.mark.django_db
def test_a_new_workspace_is_private_to_the_console_and_the_sandbox_user() -> None:
    created = agent_create(name=f"private-{uuid.uuid4().hex[:8]}", access_level="standard")
    workspace = Path(created.agent.workspace)
    (workspace / "notes.txt").write_text("the agent's own notes\n")
    mode = workspace.stat().st_mode
    assert mode & 0o007 == 0, oct(mode)  # nothing for other users
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        return  # the rest needs other users to try as
    pwd.getpwnam("nobody")

    def lists_as(user: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["runuser", "-u", user, "--", "ls", str(workspace)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip

    outsider = lists_as("nobody")
    assert outsider.returncode != 0 and "Permission denied" in outsider.stderr
    # Control: the sandbox user (through its group) lists and writes it.
    assert stat.S_IMODE(mode) & 0o070 == 0o070
    assert "notes.txt" in lists_as(DEFAULT_SANDBOX_USER).stdout
