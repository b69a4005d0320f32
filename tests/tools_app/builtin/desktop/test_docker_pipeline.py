"""The desktop tools end to end on the docker backend: ``sandboxing.overrides.desktop:
docker``, a daphne and a worker of this module's own.

Each agent's session is Xvfb and real X programs in one standing container of the GUI
image (no network, read-only root, the section's memory and process ceilings), its
control socket's directory the only thing of the machine bound in beside the
workspace. A person's watch and take-over reach it as they reach a namespace session.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.testing import wait_until
from tests.support.pipeline import call_ended, pipeline_fixtures
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.sandbox.conftest import docker_engine
from tests.tools_app.views import test_desktop as panel
from tools_app.builtin.desktop.session import runtime_root
from tools_app.models import DesktopTakeover
from tools_app.sandbox.backends.docker.image import build_gui_image

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
people = panel.people
REDIS_DB = 7
WIDTH, HEIGHT = 640, 480
IDLE_SECONDS = 15
MEMORY_MB = 768
CONFIG: dict[str, Any] = {
    "desktop": {
        "width": WIDTH,
        "height": HEIGHT,
        "idle_seconds": IDLE_SECONDS,
        "check_seconds": 0.5,
        "watch_seconds": 1,
        "memory_mb": MEMORY_MB,
    },
    "sandboxing": {"overrides": {"desktop": "docker"}},
}
NOT_RUNNING = "desktop_app_not_running"
STANDING = {"label": ["synthorg.lifecycle=standing"]}


@pytest.fixture(scope="module")
def engine() -> Iterator[Any]:
    """The engine, with the GUI image in it before the worker's first launch."""
    client = docker_engine()
    build_gui_image(client=client)
    yield client
    client.close()


@pytest.fixture(scope="module", autouse=True)
def _image(engine: Any) -> None:
    return None


pipeline, daphne_server, _settled = pipeline_fixtures(
    "desktop-docker-pipeline", CONFIG, redis_db=REDIS_DB
)


def _succeeded(client: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = call_ended(client, tool, arguments)
    assert answer["status"] == "succeeded", (answer["error"], answer["result"])
    structured: dict[str, Any] = answer["result"]["structured"]
    return structured


def _failed_with(answer: dict[str, Any], code: str) -> None:
    assert answer["status"] == "failed", answer
    assert answer["error"]["code"] == code, answer


def _session_dir(session: str) -> Path:
    return runtime_root(None) / session


def _file_says(path: Path, text: str) -> Callable[[], bool]:
    return lambda: path.is_file() and path.read_text(encoding="utf-8").strip() == text


def _screenshot(client: AgentClient) -> dict[str, Any]:
    shot = _succeeded(client, "desktop_screenshot", {})
    stored = (Path(client.agent.workspace) / shot["path"]).read_bytes()
    assert stored.startswith(b"\x89PNG\r\n\x1a\n")
    assert hashlib.sha256(stored).hexdigest() == shot["sha256"]
    assert (shot["width"], shot["height"]) == (WIDTH, HEIGHT)
    return shot


def _containers_of(engine: Any, client: AgentClient) -> list[Any]:
    return [
        c
        for c in engine.containers.list(filters=STANDING)
        if c.labels.get("synthorg.agent_id") == str(client.agent.id)
    ]


def test_xterm_in_a_container_types_keys_and_changes_the_screen(
    make_agent: Callable[..., AgentClient], engine: Any
) -> None:
    client = make_agent("standard", autonomy="full")
    # No session yet: the calls say so.
    _failed_with(call_ended(client, "desktop_type", {"text": "hello"}), NOT_RUNNING)
    launched = _succeeded(client, "desktop_launch", {"argv": ["xterm"]})
    assert len(launched["session"]) == 32 and launched["window_title"] == "xterm"
    [container] = _containers_of(engine, client)
    host = container.attrs["HostConfig"]
    assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] is True
    assert host["Memory"] == MEMORY_MB * 1024 * 1024 and host["CapDrop"] == ["ALL"]
    binds = {m["Destination"]: m["Source"] for m in container.attrs["Mounts"]}
    assert set(binds) == {"/workspace", "/run/synthorg-desktop"}
    assert binds["/run/synthorg-desktop"] == str(_session_dir(launched["session"]) / "control")
    before = _screenshot(client)
    typed = _succeeded(client, "desktop_type", {"text": "echo hi > out.txt"})
    assert typed == {"ok": True, "characters": len("echo hi > out.txt")}
    assert _succeeded(client, "desktop_key", {"keys": "Return"}) == {"ok": True}
    out = Path(client.agent.workspace) / "out.txt"
    wait_until(_file_says(out, "hi"), timeout=60, what="xterm's shell to write out.txt")
    assert _screenshot(client)["sha256"] != before["sha256"]
    # The same session serves a second program and pointer calls.
    again = _succeeded(client, "desktop_launch", {"argv": ["xmessage", "second"]})
    assert again["session"] == launched["session"]
    assert len(_containers_of(engine, client)) == 1
    assert _succeeded(client, "desktop_click", {"x": 20, "y": 20}) == {"ok": True}


def test_the_session_has_no_network(make_agent: Callable[..., AgentClient]) -> None:
    """The shell in xterm tries the machine's loopback; the container's is its own."""
    from tests.tools_app.net.servers import LoopbackHttpServer, Reply

    client = make_agent("standard", autonomy="full")
    workspace = Path(client.agent.workspace)
    with LoopbackHttpServer() as server:
        server.route("/beacon", Reply(200, {"Content-Type": "text/plain"}, b"pong"))
        _succeeded(client, "desktop_launch", {"argv": ["xterm"]})
        probe = (
            "python3 -c \"import urllib.request as u; print(u.urlopen('"
            + server.url("/beacon")
            + "', timeout=5).read().decode())\" > got.txt 2> err.txt; echo done > done.txt"
        )
        _succeeded(client, "desktop_type", {"text": probe})
        _succeeded(client, "desktop_key", {"keys": "Return"})
        wait_until(_file_says(workspace / "done.txt", "done"), timeout=90, what="the probe")
        # Control: the shell ran the probe, and it failed to connect.
        assert (
            "urlopen error" in (workspace / "err.txt").read_text()
            or "Errno" in (workspace / "err.txt").read_text()
        )
        assert (workspace / "got.txt").read_text() == ""
        assert server.count() == 0


def test_an_idle_session_ends_its_container_and_later_calls_say_so(
    make_agent: Callable[..., AgentClient], engine: Any
) -> None:
    client = make_agent("standard", autonomy="full")
    session = _succeeded(client, "desktop_launch", {"argv": ["xmessage", "idle"]})["session"]
    # Control: right after the launch, the session answers from its container.
    _screenshot(client)
    assert len(_containers_of(engine, client)) == 1
    wait_until(
        lambda: not _session_dir(session).exists(),
        timeout=IDLE_SECONDS + 120,
        what="the idle session to end",
        poll=0.5,
    )
    _failed_with(call_ended(client, "desktop_screenshot", {}), NOT_RUNNING)
    wait_until(lambda: not _containers_of(engine, client), timeout=60, what="its container to go")


def test_healthz_says_the_desktop_runs_on_docker(daphne_server: str) -> None:
    part = httpx.get(daphne_server + "/healthz", timeout=30).json()["parts"]["desktop"]
    assert part["detail"].startswith(f"on: Xvfb {WIDTH}x{HEIGHT}"), part
    assert "synthorg-sandbox-gui" in part["detail"] and "docker:" in part["detail"], part


def test_a_person_takes_over_the_containers_desktop_and_hands_back(
    make_agent: Callable[..., AgentClient], people: Callable[[str], Any]
) -> None:
    agent = make_agent("standard", autonomy="full")
    workspace = Path(agent.agent.workspace)
    admin = people("admin")
    _succeeded(agent, "desktop_launch", {"argv": ["xterm"]})
    # The person watches the session's own picture.
    _, src, digest = panel._panel_picture(admin, agent)
    assert hashlib.sha256(admin.get(src).content).hexdigest() == digest
    taken = panel._post(admin, f"/agents/{agent.agent.id}/desktop/take-over/")
    assert taken.status_code == 302, taken.text[:500]
    assert DesktopTakeover.objects.filter(agent_id=agent.agent.id).exists()
    refused = call_ended(agent, "desktop_type", {"text": "echo agent > agent.txt\n"})
    _failed_with(refused, "desktop_taken_over")
    act = f"/agents/{agent.agent.id}/desktop/act/"
    typed = panel._post(admin, act, {"action": "type", "text": "echo person > person.txt"})
    assert typed.status_code == 302, typed.text[:500]
    pressed = panel._post(admin, act, {"action": "key", "keys": "Return"})
    assert pressed.status_code == 302, pressed.text[:500]
    wait_until(_file_says(workspace / "person.txt", "person"), timeout=90, what="person.txt")
    assert not (workspace / "agent.txt").exists()
    handed = panel._post(admin, f"/agents/{agent.agent.id}/desktop/hand-back/")
    assert handed.status_code == 302, handed.text[:500]
    # Control: handed back, the agent's call runs again.
    _succeeded(agent, "desktop_type", {"text": "echo agent > agent.txt\n"})
    wait_until(_file_says(workspace / "agent.txt", "agent"), timeout=90, what="agent.txt")


def test_cancelling_a_running_call_ends_the_sessions_container(
    make_agent: Callable[..., AgentClient], engine: Any
) -> None:
    """The cancel comes to a worker that may not hold the session: it kills the
    container's init by the pid in the lease, and the holder removes the rest."""
    client = make_agent("standard", autonomy="full")
    session = _succeeded(client, "desktop_launch", {"argv": ["xterm"]})["session"]
    # Control: the session answers before the cancel.
    _succeeded(client, "desktop_type", {"text": "# before"})
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
    wait_until(lambda: not _session_dir(session).exists(), timeout=60, what="the session end")
    wait_until(lambda: not _containers_of(engine, client), timeout=60, what="its container")
    _failed_with(call_ended(client, "desktop_screenshot", {}), NOT_RUNNING)


def test_a_switched_off_agents_container_ends(
    make_agent: Callable[..., AgentClient], engine: Any
) -> None:
    from trust_app.models import Agent

    switched_off = make_agent("standard", autonomy="full")
    kept = make_agent("standard", autonomy="full")
    ended = _succeeded(switched_off, "desktop_launch", {"argv": ["xmessage", "a"]})["session"]
    _succeeded(kept, "desktop_launch", {"argv": ["xmessage", "b"]})
    Agent.objects.filter(id=switched_off.agent.id).update(active=False)
    wait_until(lambda: not _session_dir(ended).exists(), timeout=60, what="the session end")
    wait_until(lambda: not _containers_of(engine, switched_off), timeout=60, what="its container")
    # Control: the other agent's container stands and answers.
    assert len(_containers_of(engine, kept)) == 1
    _screenshot(kept)
