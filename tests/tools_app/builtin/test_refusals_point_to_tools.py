"""Refusals point to the tool that does the job, and descriptions say what a tool does
not do.

shell_command refusing an interpreter that code_runner offers names code_runner: its
own refusal, checked at the tool with the real namespace sandbox, and the policy's,
which at the shipped levels denies such a command before the tool runs (through the
API at `standard`); code_runner runs the same code through the API; git_commit's
description says that `all: true` does not add new files, and a commit through the API
and a real worker shows it does not.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from common.testing import RunningProcess
from common.vocabulary.programs import CODE_RUNNER_LANGUAGES, program_family
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.builtin.fs_fixtures import make_context, namespace_backend
from tests.tools_app.builtin.git_fixtures import make_repo
from tools_app.builtin.base import RefusalCode, ToolRefusedError
from tools_app.builtin.code.tools import LANGUAGES
from tools_app.builtin.terminal import tools as terminal
from trust_app.models import AgentPermissions
from trust_app.services.agents import workspace_grant

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
FULL = {"terminal": "full"}
RESTRICTED = {"terminal": "restricted_commands"}


@pytest.fixture(autouse=True)
def _worker(celery_worker_process: RunningProcess) -> RunningProcess:
    return celery_worker_process


def finished(client: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = client.call(tool, arguments, wait=60, idempotency_key=uuid.uuid4().hex)
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    assert answer["status"] in ("succeeded", "failed"), (answer["decision"], answer["error"])
    return answer


def test_the_interpreters_named_are_those_code_runner_runs() -> None:
    offered = {program_family(argv[0]): language for language, argv in LANGUAGES.items()}
    assert offered == CODE_RUNNER_LANGUAGES


def _shell(ws: Path, sandbox: Any, sub: dict[str, Any], settings: dict[str, Any] | None = None,
           **arguments: Any) -> Any:  # fmt: skip
    context = make_context(ws, sandbox, settings=settings, **sub)
    return terminal.shell_command.run(context, arguments)


@pytest.mark.parametrize(
    ("sub", "settings", "arguments", "said"),
    [
        (RESTRICTED, None, {"argv": ["python3", "-V"]}, "not on the allow list"),
        (RESTRICTED, {"command_mode": True}, {"command": "python3 -V"}, "not on the allow list"),
        (FULL, {"denied_commands": ["python", "curl"]}, {"argv": ["python3", "x.py"]}, "deny list"),
        (RESTRICTED, None, {"argv": ["sh", "x.sh"]}, "not on the allow list"),
    ],
    ids=["allow-list", "command-line", "deny-list", "shell"],
)
def test_shell_command_refusing_an_interpreter_code_runner_offers_names_code_runner(
    workspace: Path,
    sub: dict[str, Any],
    settings: dict[str, Any] | None,
    arguments: dict[str, Any],
    said: str,
) -> None:
    sandbox = namespace_backend()
    try:
        with pytest.raises(ToolRefusedError) as caught:
            _shell(workspace, sandbox, sub, settings, **arguments)
        refusal = caught.value
        assert refusal.code is RefusalCode.BINARY_NOT_ALLOWED
        language = "shell" if arguments.get("argv", [""])[0] == "sh" else "python"
        assert said in refusal.reason
        assert f'use the code_runner tool (language "{language}")' in refusal.reason, refusal
        # Control: a refused program code_runner does not offer gets no such pointer.
        with pytest.raises(ToolRefusedError) as other:
            _shell(workspace, sandbox, sub, settings, argv=["curl", "--version"])
        assert other.value.code is RefusalCode.BINARY_NOT_ALLOWED
        assert "code_runner" not in other.value.reason
        # Positive control: an allowed program runs under the same rules.
        ran = _shell(workspace, sandbox, sub, settings, argv=["cat", "hello.txt"])
        assert not ran.is_error and "hello from the workspace" in ran.content
    finally:
        sandbox.close()


def _decided(client: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = client.call(tool, arguments, wait=60, idempotency_key=uuid.uuid4().hex)
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    assert answer["status"] in ("denied", "succeeded", "failed"), answer
    return answer


@pytest.mark.parametrize(
    ("arguments", "language"),
    [
        ({"argv": ["python3", "-c", "print(6 * 7)"]}, "python"),
        ({"argv": ["/usr/bin/python3.11", "job.py"]}, "python"),
        ({"argv": ["bash", "job.sh"]}, "shell"),
        ({"command": "python3 -c 'print(6 * 7)'"}, "python"),
    ],
    ids=["argv", "path-and-version", "shell", "command-line"],
)
def test_at_standard_the_policy_refusing_an_interpreter_names_code_runner(
    make_agent: Callable[..., AgentClient], arguments: dict[str, Any], language: str
) -> None:
    """Through the API at the shipped `standard` level: the policy denies the command
    before the tool runs, and its reason points to code_runner."""
    client = make_agent("standard", autonomy="full")
    denied = _decided(client, "shell_command", arguments)
    assert denied["status"] == "denied", denied
    reason = denied["decision"]["reason"]
    assert "restricted terminal access" in reason
    assert f'use the code_runner tool (language "{language}")' in reason, reason
    assert "code_runner" in denied["error"]["message"], denied["error"]
    # Control: a refused program code_runner does not run gets no such pointer.
    curl = _decided(client, "shell_command", {"argv": ["curl", "--version"]})
    assert curl["status"] == "denied" and "code_runner" not in curl["decision"]["reason"]
    # Control: an agent that may not call code_runner is not pointed at it.
    barred = make_agent("standard", autonomy="full", denied=["code_runner"])
    refused = _decided(barred, "shell_command", arguments)
    assert refused["status"] == "denied" and "code_runner" not in refused["decision"]["reason"]
    # Positive control: a program on the level's list runs for the same agent.
    listed = _decided(client, "shell_command", {"argv": ["cat", "notes.txt"]})
    assert listed["status"] in ("succeeded", "failed"), listed
    assert listed["decision"]["outcome"] != "deny", listed


def test_code_runner_runs_the_python_shell_command_refuses(
    make_agent: Callable[..., AgentClient],
) -> None:
    """Through the API: the tool the refusal names runs the code for the same agent."""
    client = make_agent("elevated", autonomy="full")
    AgentPermissions.objects.create(
        agent=client.agent, sub_constraints={"code_execution": "namespace"}
    )
    ran = finished(client, "code_runner", {"language": "python", "code": "print(6 * 7)"})
    assert ran["status"] == "succeeded", ran
    assert "42" in ran["result"]["content"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30
    ).stdout


def test_git_commit_says_and_shows_that_all_does_not_add_new_files(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent("elevated", autonomy="full")
    described = client.http.get("/api/v1/tools/git_commit/")
    assert described.status_code == 200, described.text
    body = described.json()
    assert "does not add new (untracked) files" in body["description"], body["description"]
    assert (
        "untracked files are not added"
        in (body["input_schema"]["properties"]["all"]["description"])
    )

    workspace = Path(client.agent.workspace)
    repo = make_repo(workspace / "proj")
    (repo / "README.md").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    workspace_grant(workspace)
    committed = finished(client, "git_commit", {"path": "proj", "message": "all", "all": True})
    assert committed["status"] == "succeeded", committed
    assert _git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["README.md"]
    assert "?? new.txt" in _git(repo, "status", "--porcelain")
    # Positive control: naming the new file in `paths` commits it.
    added = finished(client, "git_commit", {"path": "proj", "message": "add", "paths": ["new.txt"]})
    assert added["status"] == "succeeded", added
    assert _git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["new.txt"]
    assert _git(repo, "status", "--porcelain") == ""
