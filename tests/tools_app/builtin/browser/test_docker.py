"""The browser tools on the docker backend, run directly (the engine out of the way).

Chromium runs in a fresh container of the GUI image per call, sized by the call's
limits, with no network but the egress proxy's (none here: these agents have no
grant). Each refusal has a control beside it.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from common.config import SynthOrgConfig
from common.config.sandbox import SandboxingConfig
from common.settings_config import config_reload
from tests.tools_app.builtin.fs_fixtures import CountingSandbox, make_context
from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from tests.tools_app.sandbox.conftest import docker_engine
from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolRefusedError
from tools_app.builtin.browser.profiles import profile_end
from tools_app.builtin.browser.tools import (
    browser_navigate,
    browser_readiness,
    browser_screenshot,
)
from tools_app.sandbox.backends.docker.backend import DockerSandbox
from tools_app.sandbox.backends.docker.image import build_gui_image
from tools_app.sandbox.factory import build_sandbox_backends, gui_docker_settings

pytestmark = [pytest.mark.integration]

PAGE = "<title>Notes</title><p>workspace notes</p>"


@pytest.fixture(scope="module")
def gui_backend() -> Iterator[DockerSandbox]:
    """The browser category's docker backend, with the GUI image built."""
    client = docker_engine()
    build_gui_image(client=client)
    client.close()
    backend = DockerSandbox(gui_docker_settings(SandboxingConfig()))
    yield backend
    backend.close()


@pytest.fixture(autouse=True)
def browser_config(tmp_path: Path) -> Iterator[None]:
    """This process's config has a ``browser`` section (the tools read it per call)."""
    path = tmp_path / "synthorg.yaml"
    path.write_text(json.dumps({"browser": {"default_timeout_seconds": 60}}))
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()
    yield


def _page(workspace: Path, name: str, body: str) -> str:
    (workspace / name).write_text(body)
    (workspace / name).chmod(0o644)
    return f"file:///workspace/{name}"


def test_a_workspace_page_opens_and_nothing_outside_it(
    workspace: Path, gui_backend: DockerSandbox
) -> None:
    counting = CountingSandbox(gui_backend)
    context = make_context(workspace, counting)
    (workspace / "passwd.html").symlink_to("/etc/passwd")
    for url in ("file:///etc/passwd", "file:///workspace/passwd.html"):
        with pytest.raises(ToolRefusedError) as refused:
            browser_navigate.run(context, {"url": url})
        assert refused.value.code is RefusalCode.PATH_NOT_REACHABLE, url
    assert counting.specs == []
    # Control: a page inside the workspace opens, in the container.
    result = browser_navigate.run(context, {"url": _page(workspace, "notes.html", PAGE)})
    assert result.structured is not None
    assert result.structured["title"] == "Notes"
    assert "workspace notes" in result.structured["text"]
    assert len(counting.specs) == 1


def test_a_page_that_moves_itself_outside_the_workspace_is_refused_inside(
    workspace: Path, gui_backend: DockerSandbox
) -> None:
    context = make_context(workspace, gui_backend)
    moving = _page(
        workspace,
        "moving.html",
        "<title>Moving</title><p>moving</p><script>location.replace('file:///etc/passwd')</script>",
    )
    with pytest.raises(ToolRefusedError) as refused:
        browser_navigate.run(context, {"url": moving, "wait_until": "load"})
    assert refused.value.code is RefusalCode.PATH_NOT_REACHABLE
    assert "root:" not in refused.value.reason
    # Control: the same page without the move is read.
    staying = _page(workspace, "staying.html", "<title>Staying</title><p>staying</p>")
    result = browser_navigate.run(context, {"url": staying})
    assert result.structured is not None and "staying" in result.structured["text"]


def test_without_a_grant_the_container_reaches_no_loopback_server(
    workspace: Path, gui_backend: DockerSandbox
) -> None:
    """A workspace page pointing the browser at a server on the machine's loopback: the
    container's loopback is its own, and it has no other network."""
    with LoopbackHttpServer() as server:
        server.route("/beacon", Reply(200, {"Content-Type": "text/plain"}, b"pong"))
        target = server.url("/beacon")
        page = _page(
            workspace,
            "beacon.html",
            f"""<title>Beacon</title><p>beacon page</p><img src="{target}?img">
            <iframe src="{target}?frame"></iframe>
            <script>fetch("{target}?fetch").catch(() => 0);</script>""",
        )
        context = make_context(workspace, gui_backend, network="none")
        result = browser_navigate.run(context, {"url": page, "wait_until": "networkidle"})
        # Control: the page itself was read in the container.
        assert result.structured is not None and "beacon page" in result.structured["text"]
        assert server.count() == 0
        with pytest.raises(ToolRefusedError) as refused:
            browser_navigate.run(context, {"url": target})
        assert refused.value.code is RefusalCode.HOST_NOT_ALLOWED
        assert server.count() == 0


def test_each_call_gets_a_fresh_browser_profile(
    workspace: Path, gui_backend: DockerSandbox
) -> None:
    url = _page(
        workspace,
        "storage.html",
        "<title>Storage</title><p id=seen></p><p id=now></p><script>"
        "document.getElementById('seen').textContent = 'seen ' + "
        "(localStorage.getItem('k') || 'nothing');"
        "localStorage.setItem('k', 'kept-value');"
        "document.getElementById('now').textContent = 'now ' + localStorage.getItem('k');"
        "</script>",
    )
    context = make_context(workspace, gui_backend)
    for _ in range(2):
        result = browser_navigate.run(context, {"url": url})
        assert result.structured is not None
        # Control: the page stored the value within its own call...
        assert "now kept-value" in result.structured["text"]
        # ...and the next call's browser never saw it.
        assert "seen nothing" in result.structured["text"]


def test_an_agent_session_profile_carries_storage_between_containers(
    tmp_path: Path, workspace: Path, gui_backend: DockerSandbox
) -> None:
    """With ``per_agent_session`` the agent's next call, in a new container, sees what
    its page stored; another agent's does not."""
    path = tmp_path / "session.yaml"
    path.write_text(
        json.dumps({"browser": {"default_timeout_seconds": 60, "profile": "per_agent_session"}})
    )
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()
    url = _page(
        workspace,
        "session.html",
        "<title>Session</title><p id=seen></p><script>"
        "document.getElementById('seen').textContent = 'seen ' + "
        "(localStorage.getItem('k') || 'nothing');"
        "localStorage.setItem('k', 'kept-value');</script>",
    )
    alice = dataclasses.replace(
        make_context(workspace, gui_backend), agent_id=f"docker-{uuid.uuid4()}"
    )
    bob = dataclasses.replace(alice, agent_id=f"docker-{uuid.uuid4()}")
    try:
        seen = [browser_navigate.run(alice, {"url": url}).structured for _ in range(2)]
        assert seen[0] is not None and "seen nothing" in seen[0]["text"]
        assert seen[1] is not None and "seen kept-value" in seen[1]["text"]
        other = browser_navigate.run(bob, {"url": url}).structured
        assert other is not None and "seen nothing" in other["text"]
    finally:
        profile_end(alice.agent_id)
        profile_end(bob.agent_id)


def test_a_download_is_kept_from_the_container(workspace: Path, gui_backend: DockerSandbox) -> None:
    data = base64.b64encode(b"figures from the container").decode("ascii")
    url = _page(
        workspace,
        "download.html",
        f'<title>Get</title><a id=a href="data:text/plain;base64,{data}" download="../f.txt">'
        "get</a><script>document.getElementById('a').click()</script>",
    )
    result = browser_navigate.run(
        make_context(workspace, gui_backend), {"url": url, "wait_until": "networkidle"}
    )
    assert result.structured is not None
    (kept,) = result.structured["downloads"]
    assert kept["path"].startswith(".synthorg/downloads/") and kept["path"].endswith("f.txt")
    assert (workspace / kept["path"]).read_bytes() == b"figures from the container"


def test_a_screenshot_is_kept_in_the_workspace_with_its_digest(
    workspace: Path, gui_backend: DockerSandbox
) -> None:
    url = _page(workspace, "shot.html", "<body style='background:#c00'><p>red</p></body>")
    context = make_context(workspace, gui_backend)
    saved = browser_screenshot.run(context, {"url": url, "viewport": {"width": 320, "height": 200}})
    assert saved.structured is not None
    path = workspace / saved.structured["path"]
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and not path.is_symlink()
    assert hashlib.sha256(data).hexdigest() == saved.structured["sha256"]
    assert (saved.structured["width"], saved.structured["height"]) == (320, 200)


def test_a_page_that_multiplies_itself_is_bounded(
    workspace: Path, gui_backend: DockerSandbox
) -> None:
    bomb = _page(
        workspace,
        "bomb.html",
        "<title>Bomb</title><p>bomb</p><script>"
        "for (let i = 0; i < 300; i++) window.open('bomb.html?t' + i, '_blank');"
        "for (let i = 0; i < 50; i++) { const f = document.createElement('iframe');"
        " f.src = 'bomb.html?f' + Math.random(); document.body.appendChild(f); }</script>",
    )
    context = make_context(workspace, gui_backend)
    with pytest.raises(ToolFailedError) as failed:
        browser_navigate.run(context, {"url": bomb, "timeout_seconds": 10})
    assert failed.value.code in ("MEMORY_LIMIT", "TIMED_OUT"), failed.value.message
    # Control: the next call in the same workspace reads a page.
    result = browser_navigate.run(context, {"url": _page(workspace, "after.html", PAGE)})
    assert result.structured is not None and "workspace notes" in result.structured["text"]


def test_the_browser_and_desktop_categories_get_the_gui_backend_on_docker() -> None:
    config = SandboxingConfig.model_validate(
        {"overrides": {"browser": "docker", "code_execution": "docker"}}
    )
    backends = build_sandbox_backends(config)
    try:
        browser = backends.for_category("browser")
        plain = backends.for_category("code_execution")
        assert isinstance(browser, DockerSandbox) and isinstance(plain, DockerSandbox)
        assert browser.settings.image == "synthorg-sandbox-gui:0.1.0"
        assert browser.settings.strategy == "per-call" and browser.settings.limits_per_call
        # Control: other categories keep the plain image and its shared containers.
        assert plain.settings.image == "synthorg-sandbox:0.1.0" and plain is not browser
        assert not plain.settings.limits_per_call
    finally:
        backends.close()
    # No GUI category on docker: no GUI backend is built.
    assert build_sandbox_backends(SandboxingConfig()).gui is None


def test_the_tools_page_says_where_the_browser_runs() -> None:
    def config(backend: str) -> SynthOrgConfig:
        return SynthOrgConfig.model_validate(
            {"browser": {}, "sandboxing": {"overrides": {"browser": backend}}}
        )

    on, why = browser_readiness(config("docker"))
    assert on and "synthorg-sandbox-gui" in why, why
    on, why = browser_readiness(config("namespace"))
    assert on and "namespace" in why, why
    assert not browser_readiness(SynthOrgConfig())[0]
