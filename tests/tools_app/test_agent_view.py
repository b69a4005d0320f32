"""What an agent sees, end to end: real daphne, a real Celery worker, the real tools.

Each tool named below gets output carrying escape sequences, BEL, bidi overrides and
isolates, zero-width and tag characters, from the place that tool really reads it
(a file, a process, a loopback web server of the test's own, a host-made file name,
a commit subject, a stored memory). Neither the content nor any string of the
structured result (REST `result.structured`, MCP `structuredContent`) may carry one;
the visible text beside them comes through intact (the positive control).
"""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from jsonschema import Draft202012Validator

from approvals_app.models import ApprovalRequest
from approvals_app.services import approval_decide
from common.testing import RunningProcess
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.builtin.git_fixtures import GIT_ENV
from tests.tools_app.mcp.conftest import with_mcp
from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from tools_app.models import Invocation
from tools_app.registry import tool_catalog
from tools_app.sanitize.controls import is_invisible
from trust_app.models import AgentPermissions
from trust_app.services.agents import person_create, workspace_grant

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# The agent API fixtures, shared with the API tests.
make_agent = api_fixtures.make_agent

# One of each kind of character an agent must never receive.
HOSTILE = "\x1b[31m\x1b]8;;http://x/\x07\x07\u202e\u2066\u200b\u200d\ufeff\U000e0041\U000e007f"
VISIBLE = "visible words, héllo 日本語"
SAMPLE = f"{VISIBLE} {HOSTILE}end"
# What a file name can hold of it (no slash).
HOSTILE_NAME = "\x1b[31m\x1b]0;title\x07\x07\u202e\u2066\u200b\ufeff\U000e0041"


@pytest.fixture(autouse=True)
def _worker(celery_worker_process: RunningProcess) -> RunningProcess:
    return celery_worker_process


@pytest.fixture
def agent(make_agent: Callable[..., AgentClient]) -> AgentClient:
    client = make_agent("elevated", autonomy="full")
    workspace_grant(Path(client.agent.workspace))
    return client


@pytest.fixture
def web() -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer("127.0.0.1") as server:
        yield server


def _strings(value: Any) -> list[str]:
    """Every string in `value`, keys included."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            found.append(item)
    return found


def _hostile_left(value: Any) -> list[str]:
    return [
        text for text in _strings(value) if "\x1b" in text or any(is_invisible(c) for c in text)
    ]


def _succeeded(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert body["status"] == "succeeded", body
    return body


def _assert_clean_rest(body: dict[str, Any]) -> str:
    """No hostile character anywhere in what the agent got; answers everything it got."""
    assert not _hostile_left(body), _hostile_left(body)
    return "\n".join(_strings(body["result"]))


def _mcp_call(agent: AgentClient, daphne_server: str, tool: str, arguments: dict[str, Any]) -> Any:
    async def work(session: Any) -> Any:
        return await session.call_tool(tool, arguments)

    return with_mcp(daphne_server, agent.token, work)


def _assert_clean_mcp(result: Any, tool: str) -> str:
    assert result.is_error is False, result.content
    texts = [block.text for block in result.content]
    assert not _hostile_left(texts), texts
    assert not _hostile_left(result.structured_content), result.structured_content
    contract = tool_catalog().contract(tool)
    assert contract is not None
    Draft202012Validator(contract.output_schema).validate(result.structured_content)
    return "\n".join(texts + _strings(result.structured_content))


def test_read_file(agent: AgentClient, daphne_server: str) -> None:
    (Path(agent.agent.workspace) / "notes.txt").write_text(SAMPLE)
    seen = _assert_clean_rest(_succeeded(agent.call("read_file", {"path": "notes.txt"}, wait=30)))
    assert f"{VISIBLE} end" in seen
    mcp = _assert_clean_mcp(
        _mcp_call(agent, daphne_server, "read_file", {"path": "notes.txt"}), "read_file"
    )
    assert f"{VISIBLE} end" in mcp


def test_shell_command(agent: AgentClient, daphne_server: str) -> None:
    (Path(agent.agent.workspace) / "out.txt").write_text(SAMPLE)
    arguments = {"argv": ["cat", "out.txt"]}
    body = _succeeded(agent.call("shell_command", arguments, wait=60))
    assert f"{VISIBLE} end" in body["result"]["structured"]["stdout"]
    _assert_clean_rest(body)
    assert f"{VISIBLE} end" in _assert_clean_mcp(
        _mcp_call(agent, daphne_server, "shell_command", arguments), "shell_command"
    )


def _allow_loopback(agent: AgentClient, web: LoopbackHttpServer) -> None:
    AgentPermissions.objects.update_or_create(
        agent=agent.agent,
        defaults={"sub_constraints": {"network": "allowlist_only", "allowed_hosts": ["127.0.0.1"]}},
    )


def test_http_request_from_a_loopback_server(
    agent: AgentClient, daphne_server: str, web: LoopbackHttpServer
) -> None:
    _allow_loopback(agent, web)
    web.route(
        "/hostile",
        Reply(200, {"Content-Type": "text/plain; charset=utf-8"}, SAMPLE.encode()),
    )
    arguments = {"url": web.url("/hostile")}
    body = _succeeded(agent.call("http_request", arguments, wait=60))
    assert f"{VISIBLE} end" == body["result"]["structured"]["body"]
    assert body["result"]["structured"]["status"] == 200, "numbers stay numbers"
    _assert_clean_rest(body)
    assert f"{VISIBLE} end" in _assert_clean_mcp(
        _mcp_call(agent, daphne_server, "http_request", arguments), "http_request"
    )


def test_html_to_text_from_a_loopback_server(
    agent: AgentClient, daphne_server: str, web: LoopbackHttpServer
) -> None:
    _allow_loopback(agent, web)
    page = f"<html><head><title>T{HOSTILE}itle</title></head><body><p>{SAMPLE}</p></body></html>"
    web.route("/page", Reply(200, {"Content-Type": "text/html; charset=utf-8"}, page.encode()))
    arguments = {"url": web.url("/page")}
    body = _succeeded(agent.call("html_to_text", arguments, wait=60))
    assert body["result"]["structured"]["title"] == "Title"
    assert f"{VISIBLE} end" in body["result"]["structured"]["text"]
    _assert_clean_rest(body)
    assert "Title" in _assert_clean_mcp(
        _mcp_call(agent, daphne_server, "html_to_text", arguments), "html_to_text"
    )


def test_list_directory_with_a_host_made_file_name(agent: AgentClient, daphne_server: str) -> None:
    workspace = Path(agent.agent.workspace)
    (workspace / f"report{HOSTILE_NAME}.txt").write_text("x")
    (workspace / "plain-name.txt").write_text("y")
    body = _succeeded(agent.call("list_directory", {"path": "."}, wait=30))
    names = {entry["name"] for entry in body["result"]["structured"]["entries"]}
    assert {"report.txt", "plain-name.txt"} <= names
    _assert_clean_rest(body)
    seen = _assert_clean_mcp(
        _mcp_call(agent, daphne_server, "list_directory", {"path": "."}), "list_directory"
    )
    assert "report.txt" in seen and "plain-name.txt" in seen


def test_git_log_commit_subject(agent: AgentClient, daphne_server: str) -> None:
    repo = Path(agent.agent.workspace) / "repo"
    repo.mkdir()
    git = ["git", "-c", "core.quotepath=false"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, env=GIT_ENV, check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], cwd=repo, env=GIT_ENV, check=True)
    subject = f"Fix {HOSTILE}the parser ({VISIBLE})"
    subprocess.run([*git, "commit", "-q", "-m", subject], cwd=repo, env=GIT_ENV, check=True)
    workspace_grant(Path(agent.agent.workspace))
    body = _succeeded(agent.call("git_log", {"path": "repo"}, wait=60))
    seen = _assert_clean_rest(body)
    assert f"Fix the parser ({VISIBLE})" in seen
    assert f"Fix the parser ({VISIBLE})" in _assert_clean_mcp(
        _mcp_call(agent, daphne_server, "git_log", {"path": "repo"}), "git_log"
    )


def test_memory_recall(agent: AgentClient, daphne_server: str) -> None:
    stored = _succeeded(agent.call("memory_store", {"content": SAMPLE}, wait=30))
    _assert_clean_rest(stored)
    memory_id = stored["result"]["structured"]["memory"]["id"]
    body = _succeeded(agent.call("memory_recall", {"id": memory_id}, wait=30))
    assert body["result"]["structured"]["memory"]["content"] == f"{VISIBLE} end"
    _assert_clean_rest(body)
    assert f"{VISIBLE} end" in _assert_clean_mcp(
        _mcp_call(agent, daphne_server, "memory_recall", {"id": memory_id}), "memory_recall"
    )


def test_a_failed_run_s_error_message_quoting_hostile_output_is_clean(
    agent: AgentClient, daphne_server: str
) -> None:
    (Path(agent.agent.workspace) / "out.txt").write_text(SAMPLE)
    # cat prints the file, then fails on the missing one: the error quotes the output.
    arguments = {"argv": ["cat", "out.txt", "missing.txt"]}
    body = agent.call("shell_command", arguments, wait=60).json()
    assert body["status"] == "failed", body
    assert not _hostile_left(body), _hostile_left(body)
    assert f"{VISIBLE} end" in body["error"]["message"]

    async def work(session: Any) -> Any:
        return await session.call_tool("shell_command", arguments)

    result = with_mcp(daphne_server, agent.token, work)
    assert result.is_error is True
    texts = [block.text for block in result.content]
    assert not _hostile_left(texts) and not _hostile_left(result.structured_content)
    assert any(f"{VISIBLE} end" in text for text in texts)


def test_a_person_s_denial_reason_reaches_the_agent_clean(
    make_agent: Callable[..., AgentClient], daphne_server: str
) -> None:
    client = make_agent(autonomy="locked")
    created = client.call("test_echo", {"text": "x"}, wait=0).json()
    assert created["status"] == "pending_approval", created
    operator = person_create(username="sanitise-operator", role="operator", password=None)
    request = ApprovalRequest.objects.get(invocation_id=created["id"])
    approval_decide(
        request=request, person=operator, decision="deny", reason=f"not now{HOSTILE}, later"
    )
    body = client.get(created["id"]).json()
    assert body["status"] == "denied", body
    assert not _hostile_left(body), _hostile_left(body)
    assert "not now, later" in str(body)
    # Positive control: the stored reason kept what the person typed, for auditors.
    assert HOSTILE in str(Invocation.objects.get(id=created["id"]).error_message)


# --- the console's own secrets --------------------------------------------------


def _spellings_of_the_secret_key() -> dict[str, str]:
    key = settings.SECRET_KEY
    raw = key.encode()
    return {
        "split over two lines": f"{key[:30]}\n{key[30:]}",
        "space separated": " ".join(key),
        "base64 at offset 1": base64.b64encode(b"x" + raw + b"yz").decode(),
        "base64url at offset 2": base64.urlsafe_b64encode(b"xy" + raw).decode(),
        "hex": raw.hex(),
    }


def test_the_secret_key_is_redacted_in_every_encoding_and_paths_are_not(
    agent: AgentClient, daphne_server: str
) -> None:
    spellings = _spellings_of_the_secret_key()
    lines = [f"{name}: {text}" for name, text in spellings.items()]
    lines += ["PWD=/home/x", "l1_token_budget=4000"]
    (Path(agent.agent.workspace) / "leak.txt").write_text("\n".join(lines) + "\n")
    body = _succeeded(agent.call("read_file", {"path": "leak.txt"}, wait=30))
    seen = "".join(_assert_clean_rest(body).split())
    for name, text in spellings.items():
        squeezed = "".join(text.split())
        for start in range(0, len(squeezed) - 16, 8):
            assert squeezed[start : start + 16] not in seen, f"{name} leaked"
        assert "".join(f"{name}:[REDACTED:known_secret]".split()) in seen
    # Positive control: what is not a secret comes through as it was.
    assert "PWD=/home/x" in body["result"]["content"]
    assert "l1_token_budget=4000" in body["result"]["content"]
    raw = Invocation.objects.get(id=body["id"]).raw_content
    assert spellings["hex"] in raw, "auditors keep the raw output"


def test_list_tools_over_mcp_stays_valid_against_its_output_schema(
    agent: AgentClient, daphne_server: str
) -> None:
    result = _mcp_call(agent, daphne_server, "list_tools", {})
    _assert_clean_mcp(result, "list_tools")
    assert isinstance(result.structured_content["l1_token_budget"], int)
    assert not isinstance(result.structured_content["l1_token_budget"], bool)


def test_a_secret_named_variable_of_the_worker_s_environment_is_redacted(
    agent: AgentClient, test_env: dict[str, str]
) -> None:
    token = test_env["SYNTHORG_TEST_DEPLOY_TOKEN"]
    (Path(agent.agent.workspace) / "env.txt").write_text(
        f"found {token} and, base64, {base64.b64encode(token.encode()).decode()}\n"
        f"region {test_env['SYNTHORG_VAR_DIR']}\n"
    )
    body = _succeeded(agent.call("read_file", {"path": "env.txt"}, wait=30))
    seen = _assert_clean_rest(body)
    assert token not in seen and base64.b64encode(token.encode()).decode()[4:-4] not in seen
    assert "found [REDACTED:known_secret] and, base64, [REDACTED:known_secret]" in seen
    # Positive control: a path from the same environment is not a secret.
    assert f"region {test_env['SYNTHORG_VAR_DIR']}" in seen
