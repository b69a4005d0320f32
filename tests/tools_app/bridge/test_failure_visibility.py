"""Admins see why an upstream server failed, and a server's code stays its own.

A daphne and a worker of this module's own, with a config naming real stdio servers:
``broken`` (node, its script missing: it says ``Cannot find module`` on standard error
and exits), ``noisy`` (writes hundreds of lines, terminal escapes and a secret of the
console's environment there, then exits), ``coded`` (an SDK server whose code lives in
a directory bound into its sandbox only, through its ``ro_binds``) and ``other`` (the
suite's own SDK server, with binds of its own). The worker's discovery lists them; the
tests read the audit rows, the worker's log, ``/healthz`` and the tools pages, and call
tools as an agent through the public API:

- the failed servers' reason is on ``/healthz`` (not required: the console stays in
  rotation) and the tail of their standard error in the ``mcp.server_unavailable``
  row and the worker's log line, sanitised and bounded;
- the tools pages show a server that never listed as unavailable, with the reason;
- an agent's ``shell_command`` cannot read ``coded``'s code directory, nor can another
  server, while ``coded`` starts, lists and answers (positive control), and a shared
  bind is read by the same shell (control);
- an upstream error result keeps its structured content, over REST and MCP.
"""

from __future__ import annotations

import json
import shutil
import sysconfig
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client

from audit_app.models import AuditEvent
from common.testing import wait_until
from tests.support.pipeline import Pipeline, configured_pipeline
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.mcp.conftest import with_mcp
from tools_app.bridge.stderr import MAX_BYTES, MAX_LINES
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
REDIS_DB = 4
SERVERS = Path(__file__).with_name("servers")
# The suite's own site-packages: the Python servers import the SDK from there.
SITE = sysconfig.get_paths()["purelib"]
# Discovery runs this often, so each test finds what the last one's flush removed.
HEALTH_INTERVAL = 10
SHARED_MARKER = "shared-bind-marker-51d0"
PASSWORD = "pw-failure-visibility-1"
REFUSED = {"code": "out_of_stock", "item": "tea", "retry_after_seconds": 30}


def _noisy(secret: str) -> str:
    return (
        "import sys\n"
        "for i in range(300): sys.stderr.write(f'warming up {i}\\n')\n"
        "sys.stderr.write('\\x1b[31mfatal\\x1b[0m \\x1b]0;pwned\\x07 config unreadable\\n')\n"
        f"sys.stderr.write('deploy token {secret}\\n')\n"
        "sys.stderr.write('giving up\\n')\n"
        "sys.exit(1)\n"
    )


def _outside_tmp(prefix: str) -> Path:
    # Never under /tmp: the sandbox's own /tmp would hide it (the config refuses it).
    made = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    made.chmod(0o755)
    return made


@pytest.fixture(scope="module")
def dirs() -> Iterator[dict[str, Path]]:
    code, shared = _outside_tmp("synthorg-code."), _outside_tmp("synthorg-shared.")
    shutil.copy(SERVERS / "py_code.py", code / "py_code.py")
    (code / "py_code.py").chmod(0o644)
    (shared / "marker.txt").write_text(SHARED_MARKER)
    (shared / "marker.txt").chmod(0o644)
    yield {"code": code, "shared": shared}
    shutil.rmtree(code, ignore_errors=True)
    shutil.rmtree(shared, ignore_errors=True)


def _config(code: Path, shared: Path, secret: str) -> dict[str, Any]:
    read = {"safety_classes": {"*": "read"}, "action_types": {"*": "code:read"}}
    return {
        "sandboxing": {"namespace": {"extra_ro_binds": [str(shared)]}},
        "mcp_servers": [
            {"name": "broken", "transport": "stdio",
             "command": ["node", f"{code}/missing/index.js"], "ro_binds": [str(code)]},
            {"name": "noisy", "transport": "stdio",
             "command": ["/usr/bin/python3", "-c", _noisy(secret)]},
            {"name": "coded", "transport": "stdio",
             "command": ["/usr/bin/python3", f"{code}/py_code.py", SITE],
             "ro_binds": [str(code), SITE], "tools": read},
            {"name": "other", "transport": "stdio",
             "command": ["/usr/bin/python3", f"{SERVERS}/py_tools.py", SITE],
             "ro_binds": [str(SERVERS), SITE], "tools": {"allow": ["read_path"], **read}},
        ],
    }  # fmt: skip


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the pipeline's config and logs are written."""
    return tmp_path_factory.mktemp("failure-visibility")


@pytest.fixture(scope="module")
def pipeline(test_env: dict[str, str], root: Path, dirs: dict[str, Path]) -> Iterator[Pipeline]:
    env = dict(test_env, SYNTHORG_BRIDGE_HEALTH_INTERVAL=str(HEALTH_INTERVAL))
    config = _config(dirs["code"], dirs["shared"], test_env["SYNTHORG_TEST_DEPLOY_TOKEN"])
    with configured_pipeline(env, root, config, redis_db=REDIS_DB) as started:
        yield started


@pytest.fixture(scope="module")
def daphne_server(pipeline: Pipeline) -> str:
    return pipeline.url


@pytest.fixture(autouse=True)
def _settled(pipeline: Pipeline) -> Iterator[None]:
    yield
    pipeline.settle()


def _healthz(url: str) -> tuple[int, dict[str, Any]]:
    answer = httpx.get(url + "/healthz", timeout=30)
    return answer.status_code, answer.json()


def _server_row(server: str) -> AuditEvent | None:
    return (
        AuditEvent.objects.filter(kind="mcp.server_unavailable", data__server=server)
        .order_by("-id")
        .first()
    )


def _state(url: str, server: str) -> str:
    part = _healthz(url)[1]["parts"].get(f"bridge.{server}", {})
    return str(part.get("state", ""))


def _wait_for_states(url: str, wanted: dict[str, str]) -> None:
    wait_until(
        lambda: all(_state(url, name) == state for name, state in wanted.items()),
        timeout=240,
        what=f"/healthz to show {wanted}",
    )


def test_a_server_that_cannot_start_says_why_on_healthz_in_audit_and_in_the_log(
    pipeline: Pipeline, dirs: dict[str, Path], root: Path
) -> None:
    url = pipeline.url
    _wait_for_states(url, {"broken": "unavailable", "noisy": "unavailable", "coded": "available"})
    status, body = _healthz(url)
    broken = body["parts"]["bridge.broken"]
    assert broken["ok"] is False and broken["required"] is False
    assert "failed its health check" in broken["reason"], broken
    assert "Cannot find module" not in json.dumps(body), "stderr stays with the admins"
    # A failing server is not a failing console: it is no required part.
    assert not [name for name in body["failing"] if name.startswith("bridge")], body
    assert status == (503 if body["failing"] else 200)
    assert body["parts"]["bridge"]["ok"] is False and "broken" in body["parts"]["bridge"]["detail"]
    # Positive control: the server that starts is available, with what it listed.
    coded = body["parts"]["bridge.coded"]
    assert (
        coded["ok"] is True and coded["state"] == "available" and "listed 3 tool" in coded["detail"]
    ), coded

    wait_until(lambda: _server_row("broken") is not None, timeout=120, what="the audit row")
    row = _server_row("broken")
    assert row is not None and row.reason == broken["reason"]
    assert "Cannot find module" in row.data["stderr"], row.data
    assert f"{dirs['code']}/missing/index.js" in row.data["stderr"]
    log = (root / "worker.log").read_text()
    lines = [line for line in log.splitlines() if "bridge_server_unavailable" in line]
    assert any("Cannot find module" in line and "broken" in line for line in lines), lines[-3:]
    # Control: no row says the server that lists is unavailable.
    assert _server_row("coded") is None


def test_the_stderr_kept_is_sanitised_and_bounded(
    pipeline: Pipeline, test_env: dict[str, str], root: Path
) -> None:
    wait_until(lambda: _server_row("noisy") is not None, timeout=240, what="noisy's row")
    row = _server_row("noisy")
    assert row is not None
    said = row.data["stderr"]
    lines = said.split("\n")
    assert lines[-1] == "giving up" and lines[-3] == "fatal  config unreadable", lines[-3:]
    assert len(lines) <= MAX_LINES and len(said.encode()) <= MAX_BYTES
    assert "warming up 0" not in said and "warming up 299" in said
    assert "\x1b" not in said and "pwned" not in said
    secret = test_env["SYNTHORG_TEST_DEPLOY_TOKEN"]
    assert secret not in said and "deploy token [REDACTED:" in said
    log = (root / "worker.log").read_text()
    assert secret not in log, "nor does the log line carry it"


def test_the_tools_pages_show_a_server_that_never_listed_as_unavailable(
    pipeline: Pipeline,
) -> None:
    url = pipeline.url
    _wait_for_states(url, {"broken": "unavailable", "coded": "available"})
    person_create(username="ada", role="admin", password=PASSWORD)
    client = Client()
    assert client.login(username="ada", password=PASSWORD)
    cookies = {"sessionid": client.cookies["sessionid"].value}

    def page_of(path: str) -> str:
        return httpx.get(url + path, cookies=cookies, timeout=60).text

    # The last test's flush took the records; the next health check writes them again.
    wait_until(
        lambda: "3 of 3 available" in _row(page_of("/tools/"), "coded"),
        timeout=240,
        what="coded's tools to be recorded again",
    )
    for page in ("/tools/", "/tools/upstream/"):
        html = page_of(page)
        broken = _row(html, "broken")
        assert 'data-state="unavailable"' in broken, broken
        assert "failed its health check" in broken
        assert "never listed its tools" in broken
        assert "Cannot find module" in broken, "admins read its last words"
        coded = _row(html, "coded")
        assert 'data-state="available"' in coded and "3 of 3 available" in coded, coded


def _row(html: str, server: str) -> str:
    start = html.index(f'data-server="{server}"')
    return html[start : html.index("</tr>", start)]


def _agent_with_tools(make: Callable[..., AgentClient], *names: str) -> AgentClient:
    agent = make("elevated", autonomy="full")

    def listed() -> bool:
        answer = agent.http.get("/api/v1/tools/")
        return answer.status_code == 200 and set(names) <= {
            t["name"] for t in answer.json()["tools"]
        }

    wait_until(listed, timeout=240, what=f"{names} to be listed")
    return agent


def _run(agent: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = agent.call(tool, arguments, wait=60, idempotency_key=uuid.uuid4().hex)
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    for _ in range(3):  # a server starting on a loaded machine: wait on
        if answer["status"] not in ("queued", "running"):
            break
        answer = agent.get(answer["id"], wait=60).json()
    assert answer["status"] in ("succeeded", "failed"), answer
    return answer


def test_an_agents_shell_cannot_read_a_servers_code_which_the_server_runs(
    make_agent: Callable[..., AgentClient], dirs: dict[str, Path]
) -> None:
    code = dirs["code"]
    agent = _agent_with_tools(make_agent, "coded__echo", "other__read_path")
    for argv in (["cat", f"{code}/py_code.py"], ["ls", str(code)], ["ls", f"{SITE}/mcp"]):
        answer = _run(agent, "shell_command", {"argv": argv})
        assert answer["status"] == "failed", answer
        assert "No such file or directory" in answer["result"]["content"], answer
        assert "MCPServer" not in answer["result"]["content"]
    # Control: the same shell reads what the config binds for every sandbox.
    shared = _run(agent, "shell_command", {"argv": ["cat", f"{dirs['shared']}/marker.txt"]})
    assert shared["status"] == "succeeded" and SHARED_MARKER in shared["result"]["content"]
    # Positive control: the server runs its code from that directory and answers.
    echoed = _run(agent, "coded__echo", {"text": "hello"})
    assert echoed["status"] == "succeeded" and "echo: hello" in echoed["result"]["content"]
    # Another server does not see it either; its own code it does.
    foreign = _run(agent, "other__read_path", {"path": f"{code}/py_code.py"})
    assert foreign["status"] == "failed" and "No such file" in str(foreign), foreign
    own = _run(agent, "other__read_path", {"path": f"{SERVERS}/py_code.py"})
    assert own["status"] == "succeeded" and "MCPServer" in own["result"]["content"], own


def test_an_upstream_error_keeps_its_structured_content(
    make_agent: Callable[..., AgentClient],
) -> None:
    agent = _agent_with_tools(make_agent, "coded__refuse", "other__read_path")
    refused = _run(agent, "coded__refuse", {"item": "tea"})
    assert refused["status"] == "failed", refused
    assert refused["error"]["code"] == "upstream_error"
    assert "cannot order tea: out of stock" in refused["result"]["content"]
    assert refused["result"]["is_error"] is True
    assert refused["result"]["structured"] == REFUSED, refused["result"]
    # Control: an error without structured content gets none made up.
    plain = _run(agent, "other__read_path", {"path": "/nonexistent/file"})
    assert plain["status"] == "failed" and plain["result"]["structured"] == {}, plain

    async def over_mcp(session: Any) -> Any:
        return await session.call_tool("coded__refuse", {"item": "tea"})

    result = with_mcp(str(agent.http.base_url).rstrip("/"), agent.token, over_mcp)
    assert result.is_error is True
    assert result.structured_content == REFUSED, result
