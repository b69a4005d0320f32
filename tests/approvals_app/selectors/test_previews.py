"""Consequence previews: computed when a request opens, stored with it, on the card a
person reads (the inbox page, Django's test client) and in the REST answer.

Each preview beside its control (target present vs absent, an allowed vs a refused host),
each attack (a link out of the workspace) beside the ordinary case, and computing a
preview changes nothing: the file is as it was, nothing reaches the host.
"""

from __future__ import annotations

import html
import os
import re
import socket
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from approvals_app.models import ApprovalRequest
from approvals_app.selectors.previews import call_previews
from approvals_app.tasks import preview_push
from common.testing import wait_until
from tests.approvals_app.conftest import PASSWORD
from tests.support.pending import submitted
from tests.tools_app.builtin.git_fixtures import git, make_repo, sandbox_user_ready
from trust_app.models import AgentPermissions
from trust_app.services.agents import person_token_issue, workspace_grant

pytestmark = pytest.mark.django_db

_TAG = re.compile(r"<[^>]+>")
_LABEL = re.compile(
    r"Preview \((computed when asked, |asked for at )\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)"
)


@pytest.fixture
def agent(make_agent_row: Callable[..., Any]) -> Any:
    """A locked agent (every call waits for a person) that may reach 127.0.0.1 only."""
    made = make_agent_row()
    AgentPermissions.objects.create(agent=made, sub_constraints={"allowed_hosts": ["127.0.0.1"]})
    workspace = Path(made.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.txt").write_text("notes\n")
    (workspace / "docs").mkdir(exist_ok=True)
    return made


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback TCP port that counts who connects (nobody should)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def connections(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            peer, _ = server.accept()
        except BlockingIOError:
            return count
        peer.close()
        count += 1


def card_text(make_person: Callable[..., Any], request: ApprovalRequest) -> str:
    """The text of one request's card as an operator loads it (the whole call's page)."""
    client = Client()
    assert client.login(username=make_person("operator").username, password=PASSWORD)
    answer = client.get(f"/approvals/{request.id}/call/")
    assert answer.status_code == 200
    page = answer.content.decode()
    start = page.index('<div class="card-call"')
    return html.unescape(_TAG.sub(" ", page[start:]))


def inbox_row(make_person: Callable[..., Any], request: ApprovalRequest) -> str:
    """The text of one request's row on the inbox page an operator loads."""
    client = Client()
    assert client.login(username=make_person("operator").username, password=PASSWORD)
    page = client.get("/approvals/").content.decode()
    start = page.index(f'<article id="req-{request.id}"')
    return html.unescape(_TAG.sub(" ", page[start : page.index("</article>", start)]))


def preview_line(text: str) -> str:
    """The preview fact of a card: its label (with the time) and its value, one line."""
    found = _LABEL.search(text)
    assert found is not None, "the card shows no labelled preview"
    return " ".join(text[found.start() :].split())[:300]


def rest_previews(make_person: Callable[..., Any], request: ApprovalRequest) -> Any:
    token = person_token_issue(person=make_person("operator"))
    answer = Client().get(
        f"/api/v1/approvals/{request.id}/", headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 200
    return answer.json()["previews"]


def test_a_write_states_whether_its_target_exists_and_its_size_and_leaves_it_alone(
    agent: Any, make_person: Callable[..., Any]
) -> None:
    target = Path(agent.workspace) / "notes.txt"
    before = target.stat()
    present = submitted(agent, "write_file", {"path": "notes.txt", "content": "new\n"})
    absent = submitted(agent, "write_file", {"path": "notes/today.md", "content": "hello\n"})

    line = preview_line(card_text(make_person, present))
    assert "the target exists: a regular file of 6 B" in line
    # The inbox's row of the request carries the same fact.
    assert "the target exists: a regular file of 6 B" in preview_line(
        inbox_row(make_person, present)
    )
    control = preview_line(card_text(make_person, absent))
    assert "the target does not exist now" in control and "exists:" not in control
    # Looking at it changed nothing: same bytes, same inode, not written since.
    after = target.stat()
    assert target.read_text() == "notes\n"
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not (Path(agent.workspace) / "notes").exists()

    stored = rest_previews(make_person, present)
    assert [(p["kind"], p["available"]) for p in stored] == [("target", True)]
    assert stored[0]["text"] == "the target exists: a regular file of 6 B"
    assert stored[0]["at"].endswith("Z")
    assert rest_previews(make_person, absent)[0]["text"] == "the target does not exist now"


def test_a_delete_states_a_directory_and_a_link_without_following_it(
    agent: Any, make_person: Callable[..., Any]
) -> None:
    workspace = Path(agent.workspace)
    (workspace / "alias").symlink_to("notes.txt")

    link = submitted(agent, "delete_file", {"path": "alias"})
    folder = submitted(agent, "delete_file", {"path": "docs", "recursive": True})
    plain = submitted(agent, "delete_file", {"path": "notes.txt"})

    line = preview_line(card_text(make_person, link))
    assert "the target is a symbolic link to 'notes.txt' (not followed)" in line
    assert "6 B" not in line  # the size of what it points to is not read
    assert "the target exists: a directory" in preview_line(card_text(make_person, folder))
    # The ordinary file beside them: a regular file and its size.
    assert "the target exists: a regular file of 6 B" in preview_line(card_text(make_person, plain))
    assert (workspace / "alias").is_symlink() and (workspace / "docs").is_dir()
    assert (workspace / "notes.txt").read_text() == "notes\n"


def test_a_link_out_of_the_workspace_put_in_after_the_check_is_never_followed(
    agent: Any, tmp_path: Path
) -> None:
    workspace = Path(agent.workspace)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("x" * 4321)
    (workspace / "hop").mkdir()
    (workspace / "hop" / "secret.txt").write_text("y" * 2000)
    (workspace / "last.txt").write_text("z" * 3000)
    through = submitted(agent, "delete_file", {"path": "hop/secret.txt"})
    last = submitted(agent, "delete_file", {"path": "last.txt"})
    # Controls: while they are plain files inside the workspace, their sizes are stated.
    assert through.previews[0]["text"] == "the target exists: a regular file of 2.0 KB"
    assert last.previews[0]["text"] == "the target exists: a regular file of 2.9 KB"

    # The agent swaps a directory on the path, and the file itself, for links outside.
    (workspace / "hop" / "secret.txt").unlink()
    (workspace / "hop").rmdir()
    (workspace / "hop").symlink_to(outside)
    (workspace / "last.txt").unlink()
    (workspace / "last.txt").symlink_to(outside / "secret.txt")

    hop = call_previews(through.invocation)[0]
    assert hop["available"] is False and "not followed" in hop["text"]
    final = call_previews(last.invocation)[0]
    assert (
        final["text"]
        == f"the target is a symbolic link to '{outside / 'secret.txt'}' (not followed)"
    )
    assert "4.2 KB" not in hop["text"] + final["text"]
    assert (outside / "secret.txt").read_text() == "x" * 4321


def test_a_preview_that_fails_says_so_and_the_request_still_opens(
    agent: Any, make_person: Callable[..., Any]
) -> None:
    # notes.txt is a file, so nothing below it can be looked at.
    request = submitted(
        agent, "edit_file", {"path": "notes.txt/inner", "old_string": "a", "new_string": "b"}
    )
    line = preview_line(card_text(make_person, request))
    assert "preview unavailable: " in line
    assert request.status == "pending"
    stored = rest_previews(make_person, request)
    assert stored[0]["available"] is False and stored[0]["text"].startswith("preview unavailable: ")


def test_an_http_request_states_the_resolved_address_and_the_verdict_and_sends_nothing(
    make_agent_row: Callable[..., Any],
    make_person: Callable[..., Any],
    listener: socket.socket,
    approval_config: Callable[[str], None],
) -> None:
    # The agent may reach both names; the tool's own deny list, which only the guard
    # reads, refuses one of them: the preview says so before anyone approves.
    agent = make_agent_row()
    AgentPermissions.objects.create(
        agent=agent, sub_constraints={"allowed_hosts": ["127.0.0.1", "localhost"]}
    )
    approval_config("tools:\n  http_request: {denied_domains: [localhost]}\n")
    port = listener.getsockname()[1]
    allowed = submitted(
        agent,
        "http_request",
        {"url": f"http://127.0.0.1:{port}/report", "method": "POST", "body": "data"},
    )
    refused = submitted(agent, "http_request", {"url": f"http://localhost:{port}/report"})

    line = preview_line(card_text(make_person, allowed))
    assert (
        f"egress allowed to 127.0.0.1:{port} (an allowlisted host): resolves to 127.0.0.1; "
        "nothing was sent"
    ) in line
    control = preview_line(card_text(make_person, refused))
    assert f"egress refused: localhost:{port} is on the deny list (localhost)" in control
    assert "egress allowed" not in control
    assert connections(listener) == 0

    stored = rest_previews(make_person, refused)
    assert stored[0]["kind"] == "egress" and stored[0]["available"] is True
    assert stored[0]["text"].startswith("egress refused: ")


def test_a_tool_without_a_preview_stores_none_and_its_card_shows_none(
    agent: Any, make_person: Callable[..., Any]
) -> None:
    request = submitted(agent, "test_echo", {"text": "hi"})
    assert request.previews == []
    assert _LABEL.search(card_text(make_person, request)) is None
    assert call_previews(request.invocation) == []


def test_a_file_with_several_hard_links_says_so(agent: Any) -> None:
    workspace = Path(agent.workspace)
    os.link(workspace / "notes.txt", workspace / "twin.txt")
    request = submitted(agent, "write_file", {"path": "twin.txt", "content": "x\n"})
    assert request.previews[0]["text"] == (
        "the target exists: a regular file of 6 B, with 2 hard links"
    )


@pytest.fixture
def shop(tmp_path: Path, approval_config: Callable[[str], None]) -> Path:
    """A SQLite file with five orders (three open) as ``db_mutate``'s connection ``shop``;
    ``far`` names a PostgreSQL connection that is never dialled."""
    path = tmp_path / "shop.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY AUTOINCREMENT, status TEXT)")
        conn.executemany(
            "INSERT INTO orders (status) VALUES (?)",
            [("open",), ("open",), ("paid",), ("open",), ("paid",)],
        )
    conn.close()
    approval_config(
        "tools:\n  db_mutate:\n    connections:\n"
        f"      shop: {{url: 'sqlite:///{path}'}}\n"
        "      far: {url: 'postgresql://nobody@127.0.0.1:1/none'}\n"
    )
    return path


def dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def test_a_db_mutate_states_the_rows_it_would_change_and_leaves_the_database_as_it_was(
    agent: Any, make_person: Callable[..., Any], shop: Path
) -> None:
    before = dump(shop)
    many = submitted(
        agent,
        "db_mutate",
        {"connection": "shop", "query": "DELETE FROM orders WHERE status = 'open'"},
    )
    none = submitted(
        agent,
        "db_mutate",
        {
            "connection": "shop",
            "query": "UPDATE orders SET status = 'x' WHERE id = ?",
            "parameters": [99],
        },
    )
    added = submitted(
        agent,
        "db_mutate",
        {"connection": "shop", "query": "INSERT INTO orders (status) VALUES ('new')"},
    )

    line = preview_line(card_text(make_person, many))
    assert "3 rows affected, counted in a transaction that was rolled back" in line
    assert "0 rows affected" in preview_line(card_text(make_person, none))
    assert rest_previews(make_person, added)[0]["text"].startswith("1 row affected")
    # Every row, and the AUTOINCREMENT counter, as before the three counts.
    assert dump(shop) == before


def test_a_db_mutate_on_postgresql_is_not_run_before_approval_and_says_why(
    agent: Any, make_person: Callable[..., Any], shop: Path
) -> None:
    request = submitted(
        agent, "db_mutate", {"connection": "far", "query": "DELETE FROM orders WHERE id = 1"}
    )
    line = preview_line(card_text(make_person, request))
    assert "preview unavailable: rows not counted: on PostgreSQL" in line
    assert request.status == "pending"


@pytest.fixture
def pusher(make_agent_row: Callable[..., Any], approval_config: Callable[[str], None]) -> Any:
    """A locked agent with full git access and a repository whose ``origin`` is a loopback
    URL nobody listens on; ``origin/main`` is one commit behind ``main``."""
    sandbox_user_ready()
    made = make_agent_row()
    AgentPermissions.objects.create(
        agent=made, sub_constraints={"allowed_hosts": ["127.0.0.1"], "git": "full"}
    )
    approval_config("tools:\n  git_push: {allow_plain_http: true}\n")
    repo = make_repo(Path(made.workspace) / "proj")
    git(repo, "remote", "add", "origin", "http://127.0.0.1:9/proj.git")
    git(repo, "update-ref", "refs/remotes/origin/main", "main~1")
    workspace_grant(Path(made.workspace))
    return made


def test_a_git_push_states_the_commits_and_the_checked_remote_and_pushes_nothing(
    pusher: Any, make_person: Callable[..., Any]
) -> None:
    repo = Path(pusher.workspace) / "proj"
    request = submitted(pusher, "git_push", {"path": "proj", "branch": "main"})
    # Until a worker has looked, the card says so.
    waiting = preview_line(card_text(make_person, request))
    assert waiting.startswith("Preview (asked for at ") and "being computed by a worker" in waiting
    refs_before = git(repo, "for-each-ref")

    # The worker of the call's queue computes it (here, in this process).
    assert preview_push(str(request.id)) is True
    line = preview_line(card_text(make_person, request))
    assert "Preview (computed when asked," in line
    assert (
        "1 commit(s) would be pushed to origin (http://127.0.0.1:9/proj.git, resolved to 127.0.0.1)"
    ) in line
    assert "second commit" in line and "first commit" not in line
    assert git(repo, "for-each-ref") == refs_before

    # The control: once origin/main has the branch's head, nothing is left to push.
    git(repo, "update-ref", "refs/remotes/origin/main", "main")
    other = submitted(pusher, "git_push", {"path": "proj", "branch": "main", "remote": "origin"})
    assert preview_push(str(other.id)) is True
    stored = rest_previews(make_person, other)
    assert [(p["kind"], p["available"]) for p in stored] == [("push", True)]
    assert stored[0]["text"].startswith("no commit the remote-tracking refs lack")


def test_a_git_push_to_a_remote_the_guard_refuses_says_so(
    pusher: Any, make_person: Callable[..., Any]
) -> None:
    repo = Path(pusher.workspace) / "proj"
    git(repo, "remote", "set-url", "origin", "http://127.0.0.2:9/proj.git")
    request = submitted(pusher, "git_push", {"path": "proj", "branch": "main"})
    assert preview_push(str(request.id)) is True
    line = preview_line(card_text(make_person, request))
    assert "preview unavailable: the call would be refused: 127.0.0.2" in line


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_worker_of_the_calls_queue_computes_a_push_preview_after_the_request_opens(
    make_agent_row: Callable[..., Any], celery_worker_process: Any
) -> None:
    sandbox_user_ready()
    agent = make_agent_row()
    AgentPermissions.objects.create(
        agent=agent, sub_constraints={"allowed_hosts": ["127.0.0.1"], "git": "full"}
    )
    repo = make_repo(Path(agent.workspace) / "proj")
    git(repo, "remote", "add", "origin", "https://127.0.0.1:9/proj.git")
    git(repo, "update-ref", "refs/remotes/origin/main", "main~1")
    workspace_grant(Path(agent.workspace))
    refs_before = git(repo, "for-each-ref")

    request = submitted(agent, "git_push", {"path": "proj", "branch": "main"})
    assert request.previews[0]["pending"] is True

    def computed() -> list[Any]:
        request.refresh_from_db()
        return [p for p in request.previews if not p.get("pending")]

    wait_until(lambda: bool(computed()), timeout=120, what="the push preview")
    (item,) = request.previews
    assert item["kind"] == "push" and item["available"] is True, item
    assert item["text"].startswith(
        "1 commit(s) would be pushed to origin (https://127.0.0.1:9/proj.git, resolved to "
        "127.0.0.1): "
    )
    assert "second commit" in item["text"]
    assert request.status == "pending"
    assert git(repo, "for-each-ref") == refs_before


def test_a_name_that_does_not_resolve_in_time_leaves_the_preview_unavailable_not_refused(
    make_agent_row: Callable[..., Any],
    make_person: Callable[..., Any],
    approval_config: Callable[[str], None],
    settings: Any,
) -> None:
    # A loopback DNS server that never answers: the preview gives up, the request opens.
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    try:
        settings.SYNTHORG_PREVIEW_SECONDS = 0.5
        agent = make_agent_row()
        AgentPermissions.objects.create(
            agent=agent, sub_constraints={"allowed_hosts": ["slow.example.test"]}
        )
        port = silent.getsockname()[1]
        approval_config(f"tools:\n  http_request: {{dns_server: 127.0.0.1, dns_port: {port}}}\n")
        request = submitted(agent, "http_request", {"url": "http://slow.example.test/"})
        line = preview_line(card_text(make_person, request))
        assert "preview unavailable: host 'slow.example.test' did not resolve within 0.5s" in line
        assert "egress refused" not in line and request.status == "pending"
    finally:
        silent.close()
