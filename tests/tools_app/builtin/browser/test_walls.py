"""The browser tools' own walls, with the decision engine out of the way.

The pipeline tests (``test_pipeline``) show the engine denying a URL outside the grant
before anything runs; these run the tools directly on the real namespace sandbox, as
if that first wall had failed: the tool's URL check, the driver's check of where the
page ended up, the refusal on a backend that does not isolate, and the opt-in.
Each refusal has a control beside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from common.config import parse_config
from common.settings_config import config_reload
from tests.tools_app.builtin.fs_fixtures import CountingSandbox, grant, make_context
from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolRefusedError
from tools_app.builtin.browser.tools import browser_navigate, browser_screenshot
from tools_app.registry import build_catalog
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.backends.subprocess import SubprocessSandbox

pytestmark = [pytest.mark.integration]

PAGE = "<title>Notes</title><p>workspace notes</p>"


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


def test_file_urls_outside_the_workspace_are_refused_before_a_browser_starts(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    counting = CountingSandbox(ns_backend)
    context = make_context(workspace, counting)
    (workspace / "passwd.html").symlink_to("/etc/passwd")
    for url in (
        "file:///etc/passwd",
        "file:///workspace/../etc/passwd",
        "file:///workspace/passwd.html",
        "file://otherhost/workspace/notes.html",
    ):
        with pytest.raises(ToolRefusedError) as refused:
            browser_navigate.run(context, {"url": url})
        assert refused.value.code is RefusalCode.PATH_NOT_REACHABLE, url
    for url in ("javascript:alert(1)", "data:text/html,<p>x", "chrome://version"):
        with pytest.raises(ToolRefusedError) as refused:
            browser_navigate.run(context, {"url": url})
        assert refused.value.code is RefusalCode.INVALID_ARGUMENT, url
    assert counting.specs == []
    # Control: a page inside the workspace opens, in the sandbox.
    result = browser_navigate.run(context, {"url": _page(workspace, "notes.html", PAGE)})
    assert result.structured is not None
    assert result.structured["title"] == "Notes"
    assert "workspace notes" in result.structured["text"]
    assert len(counting.specs) == 1


def test_a_page_that_moves_itself_outside_the_workspace_is_refused_inside(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    context = make_context(workspace, ns_backend)
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


def test_http_without_a_network_grant_is_refused(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    for context in (
        make_context(workspace, ns_backend),
        make_context(workspace, ns_backend, network="none"),
    ):
        with pytest.raises(ToolRefusedError) as refused:
            browser_navigate.run(context, {"url": "http://127.0.0.1:9/"})
        assert refused.value.code is RefusalCode.HOST_NOT_ALLOWED
    # Control: the same agent may open its workspace's pages.
    context = make_context(workspace, ns_backend, network="none")
    assert browser_navigate.run(context, {"url": _page(workspace, "a.html", PAGE)}).structured


def test_the_browser_runs_only_on_the_namespace_sandbox(
    workspace: Path, subprocess_backend: SubprocessSandbox, ns_backend: NamespaceSandbox
) -> None:
    url = _page(workspace, "b.html", PAGE)
    with pytest.raises(ToolFailedError) as failed:
        browser_navigate.run(make_context(workspace, subprocess_backend), {"url": url})
    assert failed.value.code == "SANDBOX_NOT_ISOLATED"
    # Control: the namespace backend runs it.
    assert browser_navigate.run(make_context(workspace, ns_backend), {"url": url}).structured


def test_a_screenshot_does_not_follow_a_planted_link(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    url = _page(workspace, "c.html", PAGE)
    (workspace / ".synthorg").mkdir()
    (workspace / ".synthorg" / "screenshots").symlink_to("/tmp")
    grant(workspace)
    context = make_context(workspace, ns_backend)
    with pytest.raises(ToolRefusedError) as refused:
        browser_screenshot.run(context, {"url": url})
    assert refused.value.code is RefusalCode.PATH_NOT_REACHABLE
    # Control: with a plain directory the picture is saved there.
    (workspace / ".synthorg" / "screenshots").unlink()
    saved = browser_screenshot.run(context, {"url": url, "full_page": True})
    assert saved.structured is not None
    assert (workspace / saved.structured["path"]).is_file()
    assert not (workspace / saved.structured["path"]).is_symlink()


def test_a_page_that_multiplies_itself_is_bounded(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    """Frames that each load fifty more, tabs opened by script, a download: the call ends
    at the memory or time limit, nothing is downloaded, and the next call works."""
    bomb = _page(
        workspace,
        "bomb.html",
        "<title>Bomb</title><p>bomb</p><script>"
        "for (let i = 0; i < 300; i++) window.open('bomb.html?t' + i, '_blank');"
        "for (let i = 0; i < 50; i++) { const f = document.createElement('iframe');"
        " f.src = 'bomb.html?f' + Math.random(); document.body.appendChild(f); }"
        "const a = document.createElement('a'); a.href = 'data:application/octet-stream,x';"
        " a.download = 'got.bin'; document.body.appendChild(a); a.click();</script>",
    )
    context = make_context(workspace, ns_backend)
    with pytest.raises(ToolFailedError) as failed:
        browser_navigate.run(context, {"url": bomb, "timeout_seconds": 10})
    assert failed.value.code in ("MEMORY_LIMIT", "TIMED_OUT"), failed.value.message
    assert not list(workspace.rglob("got.bin"))
    # Control: the next call in the same workspace reads a page.
    result = browser_navigate.run(context, {"url": _page(workspace, "d.html", PAGE)})
    assert result.structured is not None and "workspace notes" in result.structured["text"]


@pytest.mark.parametrize("wait_until", ["load", "domcontentloaded", "networkidle"])
def test_each_wait_condition_reads_the_page(
    workspace: Path, ns_backend: NamespaceSandbox, wait_until: str
) -> None:
    url = _page(workspace, "e.html", PAGE)
    result = browser_navigate.run(
        make_context(workspace, ns_backend), {"url": url, "wait_until": wait_until}
    )
    assert result.structured is not None and result.structured["title"] == "Notes"


def test_the_category_is_registered_only_with_its_config_section() -> None:
    without = build_catalog(parse_config({}))
    with_section = build_catalog(parse_config({"browser": {}}))
    assert without.contract("browser_navigate") is None
    assert without.contract("browser_screenshot") is None
    assert with_section.contract("browser_navigate") is not None
    assert with_section.contract("browser_screenshot") is not None
    contract = with_section.contract("browser_navigate")
    assert contract is not None and contract.action_type == "browser:navigate"
