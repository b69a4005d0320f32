"""Every built-in tool a demo agent holds works in the console `make run` starts.

The demo's `build-bot` (level standard, autonomy semi) is given each tool it may use,
in an order that builds on what the earlier calls made (a page, a repository, a
screenshot), through REST as an agent would. A tool that needs what the demo does not
have (a database connection, a granted host) answers with its own clear refusal, which
is what "works" means for it here. The list of the agent's tools is compared with the
table, so a tool added to the demo without a call here fails the test.

`make run` starts the console under the launcher's private umask and the demo's
config (browser, desktop, analytics and design on); the console here is started the
same way, which is where a desktop session's directories once were unreachable for
the sandbox's user.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.acceptance.conftest import Console
from tests.acceptance.console import call_approved

PAGE = (
    '<html lang="en"><head><title>Demo page</title></head>'
    '<body><main><h1>Hello</h1><a href="other.html">other</a></main></body></html>'
)
# Loopback and a discard port: nothing is reached, the policy refuses before.
UNGRANTED_URL = "http://127.0.0.1:9/"

Answer = dict[str, Any]
Check = Callable[[Answer, dict[str, Any]], None]


def _succeeded(*needles: str) -> Check:
    def check(answer: Answer, _found: dict[str, Any]) -> None:
        assert answer["status"] == "succeeded", (answer["status"], answer["error"])
        for needle in needles:
            assert needle in answer["result"]["content"], answer

    return check


def _refused(status: str, code: str, reason: str) -> Check:
    def check(answer: Answer, _found: dict[str, Any]) -> None:
        assert answer["status"] == status, answer
        said = answer["error"] or {}
        assert said.get("code") == code, answer
        assert reason in said.get("message", ""), answer

    return check


def _screenshot(answer: Answer, found: dict[str, Any]) -> None:
    assert answer["status"] == "succeeded", answer
    structured = answer["result"]["structured"]
    assert structured["path"].startswith(".synthorg/screenshots/"), structured
    assert len(structured["sha256"]) == 64, structured
    found["screenshot"] = structured["path"]


def _stored(answer: Answer, found: dict[str, Any]) -> None:
    assert answer["status"] == "succeeded", answer
    found["memory"] = answer["result"]["structured"]["memory"]["id"]


def _desktop_picture(answer: Answer, _found: dict[str, Any]) -> None:
    assert answer["status"] == "succeeded", answer
    structured = answer["result"]["structured"]
    assert structured["path"].startswith(".synthorg/"), structured
    assert len(structured["sha256"]) == 64 and structured["width"] > 0, structured


# (tool, arguments, check): in order; arguments may name what an earlier call found.
CALLS: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]], Check]] = [
    ("list_tools", lambda _: {}, _succeeded("read_file")),
    ("load_tool", lambda _: {"tool_name": "read_file"}, _succeeded("loaded read_file")),
    (
        "load_tool_resource",
        lambda _: {"tool_name": "load_tool", "resource_id": "disclosure-guide"},
        _succeeded(),
    ),
    (
        "write_file",
        lambda _: {"path": "demo/page.html", "content": PAGE, "create_parents": True},
        _succeeded("created demo/page.html"),
    ),
    ("read_file", lambda _: {"path": "demo/page.html"}, _succeeded("<title>Demo page</title>")),
    (
        "edit_file",
        lambda _: {"path": "demo/page.html", "old_string": "Hello", "new_string": "Hello, reader"},
        _succeeded("replaced 1"),
    ),
    ("stat", lambda _: {"path": "demo/page.html"}, _succeeded("file")),
    ("list_directory", lambda _: {"path": "demo"}, _succeeded("page.html")),
    ("shell_command", lambda _: {"argv": ["git", "init", "-q", "repo"]}, _succeeded()),
    (
        "write_file",
        lambda _: {"path": "repo/notes.txt", "content": "one\n"},
        _succeeded("created repo/notes.txt"),
    ),
    ("git_status", lambda _: {"path": "repo"}, _succeeded("notes.txt")),
    (
        "git_commit",
        lambda _: {"path": "repo", "message": "First notes", "paths": ["notes.txt"]},
        _succeeded("First notes"),
    ),
    ("git_log", lambda _: {"path": "repo"}, _succeeded("First notes")),
    (
        "git_branch",
        lambda _: {"path": "repo", "action": "create", "name": "feature"},
        _succeeded(),
    ),
    (
        "edit_file",
        lambda _: {"path": "repo/notes.txt", "old_string": "one", "new_string": "two"},
        _succeeded(),
    ),
    ("git_diff", lambda _: {"path": "repo"}, _succeeded("+two")),
    (
        "git_push",
        lambda _: {"path": "repo", "branch": "feature"},
        _refused("failed", "INVALID_ARGUMENT", "no remote named 'origin'"),
    ),
    (
        "git_clone",
        lambda _: {"url": UNGRANTED_URL + "x.git", "directory": "clone"},
        _refused("denied", "denied", "not allowlisted"),
    ),
    ("code_runner", lambda _: {"language": "python", "code": "print(6 * 7)"}, _succeeded("42")),
    (
        "memory_store",
        lambda _: {"content": "the demo page greets its reader", "tags": ["demo"]},
        _stored,
    ),
    ("memory_search", lambda _: {"query": "demo page"}, _succeeded("greets its reader")),
    ("memory_recall", lambda found: {"id": found["memory"]}, _succeeded("greets its reader")),
    (
        "chart_render",
        lambda _: {
            "data": [{"month": "Jan", "revenue": 10}, {"month": "Feb", "revenue": 12}],
            "kind": "bar",
            "x": "month",
            "y": "revenue",
            "title": "Revenue",
        },
        _succeeded(".synthorg/charts/"),
    ),
    (
        "report_build",
        lambda _: {"template": "# {{ title }}", "data": {"title": "Week 12"}, "name": "weekly"},
        _succeeded(".synthorg/reports/weekly-"),
    ),
    (
        "mockup_render",
        lambda _: {"html": "<h1>Sign in</h1>", "viewport": {"width": 400, "height": 300}},
        _succeeded(".synthorg/mockups/"),
    ),
    (
        "browser_navigate",
        lambda _: {"url": "file:///workspace/demo/page.html"},
        _succeeded("Demo page", "Hello, reader"),
    ),
    ("browser_screenshot", lambda _: {"url": "file:///workspace/demo/page.html"}, _screenshot),
    (
        "browser_diff",
        lambda found: {"baseline": found["screenshot"], "url": "file:///workspace/demo/page.html"},
        _succeeded("unchanged"),
    ),
    (
        "browser_accessibility_scan",
        lambda _: {"url": "file:///workspace/demo/page.html"},
        _succeeded("axe-core"),
    ),
    (
        "browser_spec",
        lambda _: {
            "url": "file:///workspace/demo/page.html",
            "checks": [{"kind": "text", "selector": "h1", "contains": "Hello, reader"}],
        },
        _succeeded(),
    ),
    ("desktop_launch", lambda _: {"argv": ["xterm"]}, _succeeded()),
    ("desktop_type", lambda _: {"text": "echo typed"}, _succeeded()),
    ("desktop_key", lambda _: {"keys": "Return"}, _succeeded()),
    ("desktop_click", lambda _: {"x": 20, "y": 20}, _succeeded()),
    ("desktop_scroll", lambda _: {"dy": 2}, _succeeded()),
    ("desktop_screenshot", lambda _: {}, _desktop_picture),
    # Fetching needs a granted host: the demo grants none, so each is refused by policy.
    *[
        (tool, lambda _: {"url": UNGRANTED_URL}, _refused("denied", "denied", "not allowlisted"))
        for tool in ("http_request", "html_to_text", "extract_links")
    ],
    # Databases need a connection: the demo has none, and each says so.
    *[
        (
            tool,
            lambda _, more=more: {"connection": "analytics", **more},
            _refused("failed", "HOST_NOT_ALLOWED", "none are configured for you"),
        )
        for tool, more in (
            ("sql_query", {"query": "select 1"}),
            ("schema_inspect", {}),
            ("db_mutate", {"query": "delete from orders"}),
        )
    ],
    (
        "delete_file",
        lambda _: {"path": "demo/page.html"},
        _succeeded("deleted file demo/page.html"),
    ),
]


def test_the_table_names_every_tool_the_demo_agent_holds(console: Console) -> None:
    with console.agent("build-bot") as agent:
        listed = agent.get("/api/v1/tools/")
    assert listed.status_code == 200, listed.text
    held = {tool["name"] for tool in listed.json()["tools"]}
    assert held == {tool for tool, _, _ in CALLS}


def test_each_tool_of_the_demo_agent_works(console: Console, operator: httpx.Client) -> None:
    found: dict[str, Any] = {}
    failures: list[str] = []
    with console.agent("build-bot") as agent:
        for tool, arguments, check in CALLS:
            answer = call_approved(agent, operator, tool, arguments(found))
            try:
                check(answer, found)
            except AssertionError as failed:
                failures.append(f"{tool}: {failed}")
                if tool in ("browser_screenshot", "memory_store"):
                    break  # later calls need what it was to find
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("agent_name", ["research-bot", "intern-bot"])
def test_a_demo_agent_without_the_desktop_is_refused_it(console: Console, agent_name: str) -> None:
    """The control of the desktop calls above: the desktop is the level's to give."""
    with console.agent(agent_name) as agent:
        created = agent.post(
            "/api/v1/invocations/",
            json={"tool": "desktop_launch", "arguments": {"argv": ["xterm"]}, "wait": 30},
        )
    assert created.status_code == 201, created.text
    answer = created.json()
    assert answer["status"] == "denied", answer
    assert "does not permit category desktop" in answer["decision"]["reason"], answer


def test_a_page_the_demo_agent_opens_downloads_a_file_it_can_then_read(
    console: Console, operator: httpx.Client
) -> None:
    """A download lands in the agent's workspace, where its file tools read it."""
    content = "quarter,revenue\nQ1,100\n"
    encoded = base64.b64encode(content.encode()).decode("ascii")
    page = (
        f'<title>Figures</title><a id="get" href="data:text/csv;base64,{encoded}" '
        'download="../../figures.csv">figures</a>'
        "<script>document.getElementById('get').click()</script>"
    )
    with console.agent("build-bot") as agent:
        written = call_approved(
            agent,
            operator,
            "write_file",
            {"path": "downloads-demo/get.html", "content": page, "create_parents": True},
        )
        assert written["status"] == "succeeded", written
        opened = call_approved(
            agent,
            operator,
            "browser_navigate",
            {"url": "file:///workspace/downloads-demo/get.html", "wait_until": "networkidle"},
        )
        assert opened["status"] == "succeeded", opened
        (kept,) = opened["result"]["structured"]["downloads"]
        assert kept["path"] == ".synthorg/downloads/figures.csv", kept
        assert kept["sha256"] == hashlib.sha256(content.encode()).hexdigest()
        read = call_approved(agent, operator, "read_file", {"path": kept["path"]})
        assert read["status"] == "succeeded", read
        assert "Q1,100" in read["result"]["content"], read
