"""The previews of ``shell_command`` and ``git_commit``, through the public API, a real
Celery worker and a person who decides.

``shell_command``: each argument naming a workspace file is stated (a file and its size,
a directory, missing); a ``..`` climbing out and a symbolic link pointing out are shown
as outside and never followed (the control: a plain file's size). ``git_commit``: the
worker of the call's queue reads the staged diff and the files the call would add;
after approval, the commit records exactly the files the card listed. Command lines
(off in the served config) go through the same pipeline in this process.
"""

from __future__ import annotations

import hashlib
import html
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client

from approvals_app.models import ApprovalRequest
from common.testing import wait_until
from tests.approvals_app.conftest import PASSWORD
from tests.support.pending import submitted
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.builtin.git_fixtures import git, make_repo, sandbox_user_ready
from trust_app.models import AgentPermissions
from trust_app.services.agents import person_create, person_token_issue, workspace_grant

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
_TAG = re.compile(r"<[^>]+>")


@pytest.fixture
def operator() -> Any:
    return person_create(
        username=f"operator-{uuid.uuid4().hex[:8]}", role="operator", password=PASSWORD
    )


def asked(client: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = client.call(tool, arguments, idempotency_key=uuid.uuid4().hex)
    assert answer.status_code == 201, answer.text
    made = answer.json()
    assert made["status"] == "pending_approval", made["decision"]
    return made


def card_text(operator: Any, approval_id: str, *, inbox: bool = False) -> str:
    """The card as an operator loads it: the whole call's page, or its inbox row."""
    client = Client()
    assert client.login(username=operator.username, password=PASSWORD)
    page = client.get("/approvals/" if inbox else f"/approvals/{approval_id}/call/")
    assert page.status_code == 200
    text = page.content.decode()
    if inbox:
        start = text.index(f'<article id="req-{approval_id}"')
        text = text[start : text.index("</article>", start)]
    else:
        text = text[text.index('<div class="card-call"') :]
    return " ".join(html.unescape(_TAG.sub(" ", text)).split())


def rest_previews(operator: Any, approval_id: str) -> list[dict[str, Any]]:
    token = person_token_issue(person=operator)
    answer = Client().get(
        f"/api/v1/approvals/{approval_id}/", headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 200
    return list(answer.json()["previews"])


def test_a_command_states_the_workspace_files_its_arguments_name(
    make_agent: Callable[..., AgentClient], celery_worker_process: Any, operator: Any
) -> None:
    agent = make_agent("standard", autonomy="supervised")
    workspace = Path(agent.agent.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.txt").write_text("notes\n")
    (workspace / "docs").mkdir()
    (workspace / "out").symlink_to("/etc")
    (workspace / "hosts-link").symlink_to("/etc/hosts")

    made = asked(
        agent,
        "shell_command",
        {
            "argv": [
                "wc",
                "-c",
                "notes.txt",
                "../../etc/passwd",
                "out/passwd",
                "hosts-link",
                "--files0-from=docs",
                "missing.txt",
                "hello",
            ]
        },
    )
    approval = made["approval"]["id"]
    text = card_text(operator, approval)
    line = text[text.index("files named in its arguments:") :]
    # The control: a plain file inside, with its size; a directory named by an option.
    assert "notes.txt: a regular file of 6 B" in line
    assert "docs: a directory" in line
    assert "missing.txt: does not exist now" in line
    # The attacks: a climb out of the workspace, a link out, a link on the path.
    assert "../../etc/passwd: OUTSIDE the workspace (it climbs out of the workspace); " in line
    assert (
        "hosts-link: a symbolic link to '/etc/hosts' that points OUTSIDE the workspace "
        "(not followed)"
    ) in line
    assert (
        "out/passwd: out on its path is a symbolic link to '/etc' that points OUTSIDE the "
        "workspace (not followed)"
    ) in line
    # Nothing outside was looked at: one regular file (notes.txt) is sized, no other.
    assert line.count("a regular file of") == 1
    # A plain word that names nothing is not listed; nor is the program.
    assert "hello:" not in line and "wc:" not in line
    # The inbox's row and the REST answer carry the same line.
    assert "hosts-link: a symbolic link to '/etc/hosts'" in card_text(
        operator, approval, inbox=True
    )
    (files,) = [p for p in rest_previews(operator, approval) if p["kind"] == "files"]
    assert files["available"] is True and files["text"].startswith("files named in its ")
    assert (workspace / "out").is_symlink() and (workspace / "notes.txt").read_text() == "notes\n"


def test_a_command_in_a_subdirectory_reads_its_arguments_from_there(
    make_agent: Callable[..., AgentClient], celery_worker_process: Any, operator: Any
) -> None:
    agent = make_agent("standard", autonomy="supervised")
    workspace = Path(agent.agent.workspace)
    (workspace / "sub").mkdir(parents=True)
    (workspace / "top.txt").write_text("x" * 2048)
    made = asked(agent, "shell_command", {"argv": ["cat", "../top.txt", "../../x"], "cwd": "sub"})
    line = card_text(operator, made["approval"]["id"])
    assert "../top.txt: a regular file of 2.0 KB" in line
    assert "../../x: OUTSIDE the workspace" in line


def test_a_command_line_states_its_arguments_and_redirection_targets(
    make_agent_row: Callable[..., Any],
    approval_config: Callable[[str], None],
    operator: Any,
) -> None:
    # Command lines are off by default; this config (read by this process, which opens
    # the request through the same pipeline as the API) turns them on.
    approval_config("tools:\n  shell_command: {command_mode: true}\n")
    agent = make_agent_row(autonomy="supervised")
    # Full terminal access: command lines with operators are decided, not refused.
    AgentPermissions.objects.create(agent=agent, sub_constraints={"terminal": "full"})
    workspace = Path(agent.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.txt").write_text("notes\n")
    (workspace / "out").symlink_to("/etc")
    request = submitted(
        agent,
        "shell_command",
        {"command": "sort notes.txt > sorted.txt && wc -l out/passwd ../../etc/passwd 2>&1"},
    )
    line = card_text(operator, str(request.id))
    assert "notes.txt: a regular file of 6 B" in line
    assert "sorted.txt: does not exist now" in line
    assert "../../etc/passwd: OUTSIDE the workspace" in line
    assert "out/passwd: out on its path is a symbolic link to '/etc'" in line
    # The programs and the descriptor duplication are not files (an entry reads "name: …";
    # the preview's time, "21:54:31", is no entry).
    assert "sort: " not in line and "wc: " not in line and "1: " not in line


@pytest.fixture
def committer(make_agent: Callable[..., AgentClient]) -> AgentClient:
    """An agent whose commits ask a person, with a repository: ``staged.txt`` staged,
    ``README.md`` changed, ``new.txt`` untracked."""
    sandbox_user_ready()
    agent = make_agent("standard", autonomy="supervised")
    AgentPermissions.objects.create(agent=agent.agent, sub_constraints={"git": "local_only"})
    repo = make_repo(Path(agent.agent.workspace) / "proj")
    (repo / "staged.txt").write_text("staged line\n")
    git(repo, "add", "staged.txt")
    (repo / "README.md").write_text("hello\nworld\nagain\n")
    (repo / "new.txt").write_text("brand new\n")
    workspace_grant(Path(agent.agent.workspace))
    return agent


def index_digest(repo: Path) -> str:
    return hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest()


def test_a_commit_states_the_files_and_diff_it_would_record_and_records_just_those(
    committer: AgentClient, celery_worker_process: Any, daphne_server: str, operator: Any
) -> None:
    repo = Path(committer.agent.workspace) / "proj"
    before = (index_digest(repo), git(repo, "rev-parse", "HEAD"))
    made = asked(
        committer, "git_commit", {"path": "proj", "message": "add notes", "paths": ["new.txt"]}
    )
    approval = made["approval"]["id"]
    request = ApprovalRequest.objects.get(id=approval)

    def computed() -> list[dict[str, Any]]:
        request.refresh_from_db()
        return [p for p in request.previews if p["kind"] == "commit" and not p.get("pending")]

    wait_until(lambda: bool(computed()), timeout=180, what="the commit preview")
    (item,) = computed()
    assert item["available"] is True, item
    assert item["text"] == (
        "2 files would be committed: staged.txt (added); "
        "new.txt (new, not yet tracked, staged by the call)"
    )
    text = card_text(operator, approval)
    assert item["text"] in text
    assert "+staged line" in text and "new file, added whole: new.txt" in text
    # README.md is changed but neither staged nor named: not in the commit, not listed.
    assert "README.md" not in item["text"] and "+again" not in item["detail"]
    assert [p["text"] for p in rest_previews(operator, approval) if p["kind"] == "commit"] == [
        item["text"]
    ]
    # Reading it changed nothing.
    assert (index_digest(repo), git(repo, "rev-parse", "HEAD")) == before

    token = person_token_issue(person=operator)
    decided = httpx.post(
        f"{daphne_server}/api/v1/approvals/{approval}/decide/",
        json={"decision": "approve", "reason": "as previewed"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert decided.status_code == 200, decided.text

    def ran() -> bool:
        return committer.get(made["id"], wait=20).json()["status"] == "succeeded"

    wait_until(ran, timeout=180, what="the approved commit")
    recorded = git(repo, "show", "--no-renames", "--name-status", "--format=", "HEAD")
    assert sorted(recorded.split()) == sorted(["A", "staged.txt", "A", "new.txt"])


def test_a_commit_with_nothing_to_record_says_so(
    make_agent: Callable[..., AgentClient], celery_worker_process: Any
) -> None:
    sandbox_user_ready()
    agent = make_agent("standard", autonomy="supervised")
    AgentPermissions.objects.create(agent=agent.agent, sub_constraints={"git": "local_only"})
    make_repo(Path(agent.agent.workspace) / "proj")
    workspace_grant(Path(agent.agent.workspace))
    made = asked(agent, "git_commit", {"path": "proj", "message": "m"})
    request = ApprovalRequest.objects.get(id=made["approval"]["id"])

    def computed() -> list[dict[str, Any]]:
        request.refresh_from_db()
        return [p for p in request.previews if p["kind"] == "commit" and not p.get("pending")]

    wait_until(lambda: bool(computed()), timeout=180, what="the commit preview")
    assert computed()[0]["text"].startswith("nothing would be committed")
