"""Consequence previews in Chromium at 1280 and 390 px: the files a command names (a link
out of the workspace shown, not followed, beside a plain file's size) and a commit's
files and diff, which a worker computes while the card is open and the card then shows.
No sideways scroll, axe-core clean."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.inbox_page import open_inbox_at
from tests.browser.page_checks import axe_findings, axe_source, width_findings
from tests.tools_app.builtin.git_fixtures import git, make_repo, sandbox_user_ready
from trust_app.models import AgentPermissions
from trust_app.services.agents import agent_create, workspace_grant

pytestmark = [pytest.mark.browser, pytest.mark.integration]
WIDTHS = (1280, 390)


class PreviewAgent:
    """A locked agent (every call waits for a person) with a repository in its workspace:
    ``staged.txt`` staged, ``new.txt`` untracked; ``notes.txt`` and a link to /etc."""

    def __init__(self, base: str) -> None:
        created = agent_create(
            name=f"previews-{uuid.uuid4().hex[:8]}", access_level="standard", autonomy="locked"
        )
        AgentPermissions.objects.create(
            agent=created.agent, sub_constraints={"git": "local_only", "terminal": "full"}
        )
        self.workspace = Path(created.agent.workspace)
        repo = make_repo(self.workspace / "proj")
        (repo / "staged.txt").write_text("staged line\n")
        git(repo, "add", "staged.txt")
        (repo / "new.txt").write_text("brand new\n")
        (self.workspace / "notes.txt").write_text("notes\n")
        (self.workspace / "etc-link").symlink_to("/etc")
        workspace_grant(self.workspace)
        self.http = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {created.token}"}, timeout=60
        )

    def ask(self, tool: str, arguments: dict[str, Any]) -> str:
        answer = self.http.post("/api/v1/invocations/", json={"tool": tool, "arguments": arguments})
        assert answer.status_code == 201, answer.text
        body = answer.json()
        assert body["status"] == "pending_approval", body
        return str(body["approval"]["id"])


@pytest.fixture
def preview_agent(daphne_server: str) -> Iterator[PreviewAgent]:
    sandbox_user_ready()
    agent = PreviewAgent(daphne_server)
    yield agent
    agent.http.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", WIDTHS)
def test_an_operator_reads_a_commands_files_and_a_commits_diff(
    daphne_server: str,
    browser: Any,
    preview_agent: PreviewAgent,
    celery_worker_process: Any,
    width: int,
) -> None:
    page = open_inbox_at(browser, daphne_server, width)
    shell_id = preview_agent.ask(
        "shell_command", {"argv": ["cat", "notes.txt", "etc-link/passwd", "../../etc/shadow"]}
    )
    shell = page.locator(f"#req-{shell_id}")
    expect(shell).to_be_visible(timeout=10_000)
    files = shell.locator("[data-preview=files] dd")
    expect(files).to_contain_text("notes.txt: a regular file of 6 B")
    expect(files).to_contain_text(
        "etc-link/passwd: etc-link on its path is a symbolic link to '/etc' that points "
        "OUTSIDE the workspace (not followed)"
    )
    expect(files).to_contain_text("../../etc/shadow: OUTSIDE the workspace")

    commit_id = preview_agent.ask(
        "git_commit", {"path": "proj", "message": "m", "paths": ["new.txt"]}
    )
    commit = page.locator(f"#req-{commit_id}")
    expect(commit).to_be_visible(timeout=10_000)
    # The worker's answer replaces "being computed" on the open card.
    line = commit.locator("[data-preview=commit] dd")
    expect(line).to_contain_text(
        "2 files would be committed: staged.txt (added); new.txt (new, not yet tracked, "
        "staged by the call)",
        timeout=120_000,
    )
    detail = commit.locator("[data-preview-detail]")
    expect(detail.locator("pre")).not_to_be_visible()
    detail.locator("summary").click()
    expect(detail.locator("pre")).to_be_visible()
    expect(detail.locator("pre")).to_contain_text("+staged line")
    expect(detail.locator("pre")).to_contain_text("new file, added whole: new.txt")

    problems = width_findings(page) + axe_findings(page, axe_source())
    assert problems == [], problems
