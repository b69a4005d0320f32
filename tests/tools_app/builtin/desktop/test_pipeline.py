"""The desktop tools end to end: a daphne and a worker whose config has a ``desktop`` section.

Each agent's session is Xvfb and real X programs (xterm, xmessage) inside one standing
namespace sandbox, driven by xdotool; the files they write land in the agent's
workspace. Every refusal has its control beside it.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.testing import wait_until
from tests.support.pipeline import call_ended, pipeline_fixtures
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.mcp.conftest import with_mcp
from tools_app.builtin.desktop.session import runtime_root
from tools_app.quota.usage import workspace_usage
from trust_app.models import Agent

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
REDIS_DB = 7
WIDTH, HEIGHT = 640, 480
IDLE_SECONDS = 15
QUOTA = 4 * 1024 * 1024
CONFIG: dict[str, Any] = {
    "sandboxing": {"workspace_quota": "4m"},
    "desktop": {
        "width": WIDTH,
        "height": HEIGHT,
        "idle_seconds": IDLE_SECONDS,
        "check_seconds": 0.5,
    },
}
NOT_RUNNING = "desktop_app_not_running"

pipeline, daphne_server, _settled = pipeline_fixtures("desktop-pipeline", CONFIG, redis_db=REDIS_DB)


def _succeeded(client: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = call_ended(client, tool, arguments)
    assert answer["status"] == "succeeded", (answer["error"], answer["result"])
    structured: dict[str, Any] = answer["result"]["structured"]
    return structured


def _failed_with(answer: dict[str, Any], code: str) -> None:
    assert answer["status"] == "failed", answer
    assert answer["error"]["code"] == code, answer


def _agent(make: Callable[..., AgentClient], **kwargs: Any) -> AgentClient:
    return make("standard", autonomy="full", **kwargs)


def _session_dir(session: str) -> Path:
    return runtime_root(None) / session


def _file_says(path: Path, text: str) -> Callable[[], bool]:
    return lambda: path.is_file() and path.read_text(encoding="utf-8").strip() == text


def _screenshot(client: AgentClient) -> dict[str, Any]:
    shot = _succeeded(client, "desktop_screenshot", {})
    assert shot["path"].startswith(".synthorg/screenshots/") and shot["path"].endswith(".png")
    stored = (Path(client.agent.workspace) / shot["path"]).read_bytes()
    assert stored.startswith(b"\x89PNG\r\n\x1a\n")
    assert hashlib.sha256(stored).hexdigest() == shot["sha256"]
    assert (shot["width"], shot["height"]) == (WIDTH, HEIGHT)
    return shot


def test_typing_into_xterm_writes_the_workspace_and_changes_the_screen(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _agent(make_agent)
    launched = _succeeded(client, "desktop_launch", {"argv": ["xterm"]})
    assert len(launched["session"]) == 32 and launched["pid"] > 0
    assert launched["window_title"] == "xterm"
    before = _screenshot(client)
    typed = _succeeded(client, "desktop_type", {"text": "echo hi > out.txt"})
    assert typed == {"ok": True, "characters": len("echo hi > out.txt")}
    assert _succeeded(client, "desktop_key", {"keys": "Return"}) == {"ok": True}
    out = Path(client.agent.workspace) / "out.txt"
    wait_until(_file_says(out, "hi"), timeout=60, what="xterm's shell to write out.txt")
    after = _screenshot(client)
    assert after["sha256"] != before["sha256"]
    # The same session serves pointer calls too.
    assert _succeeded(client, "desktop_click", {"x": 20, "y": 20}) == {"ok": True}
    assert _succeeded(client, "desktop_scroll", {"dy": 2}) == {"ok": True}


def test_an_mcp_client_gets_the_screenshot_itself(
    make_agent: Callable[..., AgentClient], daphne_server: str
) -> None:
    client = _agent(make_agent)
    _succeeded(client, "desktop_launch", {"argv": ["xmessage", "picture"]})

    async def shoot(session: Any) -> Any:
        return await session.call_tool("desktop_screenshot", {})

    result = with_mcp(daphne_server, client.token, shoot)
    assert not result.is_error, result
    pictures = [block for block in result.content if block.type == "image"]
    assert len(pictures) == 1 and pictures[0].mime_type == "image/png"
    data = base64.b64decode(pictures[0].data)
    assert hashlib.sha256(data).hexdigest() == result.structured_content["sha256"]
    assert (Path(client.agent.workspace) / result.structured_content["path"]).read_bytes() == data


def test_a_call_without_a_session_fails_desktop_app_not_running(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _agent(make_agent)
    for tool, arguments in (
        ("desktop_type", {"text": "hello"}),
        ("desktop_screenshot", {}),
        ("desktop_click", {"x": 1, "y": 1}),
    ):
        _failed_with(call_ended(client, tool, arguments), NOT_RUNNING)
    # Control: once launched, the same calls reach the session.
    launched = _succeeded(client, "desktop_launch", {"argv": ["xmessage", "hello"]})
    assert launched["window_title"] == "xmessage"
    assert _succeeded(client, "desktop_type", {"text": "hello"})["characters"] == 5
    _screenshot(client)


def test_programs_and_arguments_outside_the_rules_are_refused(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _agent(make_agent)
    for argv in (["python3", "-c", "print(1)"], ["/bin/sh"], ["./xterm"], ["env", "xterm"]):
        refused = call_ended(client, "desktop_launch", {"argv": argv})
        _failed_with(refused, "BINARY_NOT_ALLOWED")
    preload = call_ended(
        client, "desktop_launch", {"argv": ["xmessage", "x"], "env": {"LD_PRELOAD": "/x.so"}}
    )
    _failed_with(preload, "INVALID_ARGUMENT")
    # Nothing was started by the refused calls.
    _failed_with(call_ended(client, "desktop_screenshot", {}), NOT_RUNNING)
    # Control: an allowed program with a plain variable starts.
    _succeeded(client, "desktop_launch", {"argv": ["xmessage", "x"], "env": {"LABEL": "one"}})
    for tool, arguments in (
        ("desktop_key", {"keys": "ctrl+Return2"}),
        ("desktop_key", {"keys": "hyper+s"}),
        ("desktop_click", {"x": WIDTH, "y": 10}),
        ("desktop_type", {"text": "bell\x07"}),
    ):
        _failed_with(call_ended(client, tool, arguments), "INVALID_ARGUMENT")
    # Control: the same tools with arguments inside the rules.
    assert _succeeded(client, "desktop_key", {"keys": "ctrl+s Escape"}) == {"ok": True}
    assert _succeeded(client, "desktop_click", {"x": WIDTH - 1, "y": 10}) == {"ok": True}


def test_another_agent_never_reaches_this_agents_session(
    make_agent: Callable[..., AgentClient],
) -> None:
    owner = _agent(make_agent)
    workspace = Path(owner.agent.workspace)
    _succeeded(owner, "desktop_launch", {"argv": ["xterm"]})
    # Another agent, even one working in the same directory, has no session of its own.
    other = _agent(make_agent, workspace=str(workspace))
    _failed_with(call_ended(other, "desktop_type", {"text": "echo leak > leak.txt\n"}), NOT_RUNNING)
    _failed_with(call_ended(other, "desktop_screenshot", {}), NOT_RUNNING)
    # Its own launch starts a session of its own, not the owner's.
    own = _succeeded(other, "desktop_launch", {"argv": ["xmessage", "other"]})
    _succeeded(other, "desktop_type", {"text": "echo leak > leak.txt\n"})
    # Control: the owner's typing reaches its xterm; the other's never did.
    _succeeded(owner, "desktop_type", {"text": "echo mine > mine.txt\n"})
    wait_until(_file_says(workspace / "mine.txt", "mine"), timeout=60, what="mine.txt")
    assert not (workspace / "leak.txt").exists()
    owners = _succeeded(owner, "desktop_launch", {"argv": ["xmessage", "again"]})
    assert owners["session"] != own["session"]


def test_an_idle_session_ends_and_later_calls_say_so(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _agent(make_agent)
    session = _succeeded(client, "desktop_launch", {"argv": ["xmessage", "idle"]})["session"]
    # Control: right after the launch, the session answers.
    _screenshot(client)
    assert _session_dir(session).is_dir()
    wait_until(
        lambda: not _session_dir(session).exists(),
        timeout=IDLE_SECONDS + 120,
        what="the idle session to end",
        poll=0.5,
    )
    _failed_with(call_ended(client, "desktop_screenshot", {}), NOT_RUNNING)


def test_cancelling_a_running_desktop_call_ends_its_session(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _agent(make_agent)
    session = _succeeded(client, "desktop_launch", {"argv": ["xterm"]})["session"]
    # Control: the session answers before the cancel.
    _succeeded(client, "desktop_type", {"text": "# before"})
    # Typing this takes many seconds: the cancel comes while it runs.
    sent = client.call("desktop_type", {"text": "#" * 1500}, idempotency_key=uuid.uuid4().hex)
    assert sent.status_code == 201, sent.text
    call_id = sent.json()["id"]
    wait_until(
        lambda: client.get(call_id).json()["status"] != "queued",
        timeout=60,
        what="the long desktop_type to start",
    )
    cancelled = client.http.post(f"/api/v1/invocations/{call_id}/cancel/")
    assert cancelled.status_code == 200, cancelled.text
    answer = client.get(call_id, wait=60).json()
    for _ in range(5):
        if answer["status"] not in ("queued", "running"):
            break
        answer = client.get(call_id, wait=60).json()
    assert answer["status"] == "cancelled", answer
    wait_until(
        lambda: not _session_dir(session).exists(),
        timeout=60,
        what="the cancelled call's session to end",
        poll=0.2,
    )
    _failed_with(call_ended(client, "desktop_screenshot", {}), NOT_RUNNING)


def test_healthz_says_the_desktop_is_on(daphne_server: str) -> None:
    part = httpx.get(daphne_server + "/healthz", timeout=30).json()["parts"]["desktop"]
    assert part["required"] is False
    assert part["detail"].startswith(f"on: Xvfb {WIDTH}x{HEIGHT}"), part
    # The namespace sandbox the sessions run in is reported with it.
    assert "namespace:" in part["detail"], part


def test_a_switched_off_agents_session_ends(make_agent: Callable[..., AgentClient]) -> None:
    switched_off = _agent(make_agent)
    kept = _agent(make_agent)
    ended = _succeeded(switched_off, "desktop_launch", {"argv": ["xmessage", "a"]})["session"]
    stays = _succeeded(kept, "desktop_launch", {"argv": ["xmessage", "b"]})["session"]
    Agent.objects.filter(id=switched_off.agent.id).update(active=False)
    wait_until(
        lambda: not _session_dir(ended).exists(),
        timeout=60,
        what="the switched-off agent's session to end",
        poll=0.2,
    )
    # Control: the other agent's session stands and answers.
    assert _session_dir(stays).is_dir()
    _screenshot(kept)


def _screenshots(client: AgentClient) -> set[str]:
    folder = Path(client.agent.workspace) / ".synthorg" / "screenshots"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def _fill_to(workspace: Path, left: int) -> Path:
    filler = workspace / "filler.bin"
    usage = workspace_usage(workspace).total - (filler.stat().st_size if filler.exists() else 0)
    filler.write_bytes(b"\0" * (QUOTA - usage - left))
    return filler


def test_a_screenshot_past_the_workspace_quota_is_undone_and_refused(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _agent(make_agent)
    workspace = Path(client.agent.workspace)
    _succeeded(client, "desktop_launch", {"argv": ["xmessage", "quota"]})
    # Control: under the quota, the screenshot is kept.
    _screenshot(client)
    kept = _screenshots(client)
    # A few hundred bytes left: the PNG is written by the session, then taken back.
    _fill_to(workspace, 300)
    answer = call_ended(client, "desktop_screenshot", {})
    _failed_with(answer, "LIMIT_EXCEEDED")
    assert "workspace_quota" in answer["error"]["message"], answer
    assert _screenshots(client) == kept
    assert workspace_usage(workspace).total <= QUOTA


def test_what_desktop_programs_write_between_calls_is_held_to_the_quota(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = _agent(make_agent)
    workspace = Path(client.agent.workspace)
    _succeeded(client, "desktop_launch", {"argv": ["xterm"]})
    filler = _fill_to(workspace, 64 * 1024)
    # xterm's shell writes past the quota (the session's own file-size limit is far
    # larger), whether during the key's call or just after it.
    _succeeded(client, "desktop_type", {"text": "head -c 200000 /dev/zero > big.bin"})
    pressed = call_ended(client, "desktop_key", {"keys": "Return"})
    big = workspace / "big.bin"
    if pressed["status"] == "succeeded":
        # Written after the call was measured: the next call finds the workspace over.
        wait_until(
            lambda: big.is_file() and big.stat().st_size == 200000,
            timeout=60,
            what="xterm's shell to write big.bin",
        )
        answer = call_ended(client, "desktop_screenshot", {})
        _failed_with(answer, "LIMIT_EXCEEDED")
        assert "programs on the desktop wrote past it" in answer["error"]["message"], answer
        big.unlink()
    else:
        # Written while the key's call was measured: undone at once.
        _failed_with(pressed, "LIMIT_EXCEEDED")
        assert not big.exists()
    # Control: with room made, the same session takes calls again.
    filler.unlink()
    _screenshot(client)
