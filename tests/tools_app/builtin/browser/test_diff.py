"""``browser_diff`` on the real namespace sandbox: a baseline screenshot against the page
again, or against another picture, and the walls around the paths it reads."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from common.settings_config import config_reload
from tests.tools_app.builtin.fs_fixtures import CountingSandbox, make_context
from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolRefusedError
from tools_app.builtin.browser.diff import browser_diff
from tools_app.builtin.browser.tools import browser_screenshot
from tools_app.sandbox.backends.namespace import NamespaceSandbox

pytestmark = [pytest.mark.integration]

BANNER = (100, 120, 300, 150)  # x, y, width, height
PAGE = """<!doctype html><html><head><title>Landing</title></head>
<body style="margin:0;background:#ffffff">
<div id="banner" style="position:absolute;left:{0}px;top:{1}px;width:{2}px;height:{3}px;
background:{colour}"></div>
<p style="position:absolute;left:20px;top:20px;margin:0;font:16px sans-serif">Welcome</p>
</body></html>"""


@pytest.fixture(autouse=True)
def browser_config(tmp_path: Path) -> Iterator[None]:
    path = tmp_path / "synthorg.yaml"
    path.write_text(json.dumps({"browser": {"default_timeout_seconds": 60}}))
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()
    yield


def _page(workspace: Path, name: str, colour: str) -> str:
    (workspace / name).write_text(PAGE.format(*BANNER, colour=colour))
    (workspace / name).chmod(0o644)
    return f"file:///workspace/{name}"


def _baseline(workspace: Path, backend: NamespaceSandbox, url: str) -> str:
    shot = browser_screenshot.run(
        make_context(workspace, backend), {"url": url, "viewport": {"width": 640, "height": 480}}
    )
    assert shot.structured is not None
    return str(shot.structured["path"])


def _diff(workspace: Path, backend: Any, **arguments: Any) -> dict[str, Any]:
    result = browser_diff.run(make_context(workspace, backend), arguments)
    assert result.structured is not None
    return dict(result.structured)


def test_an_unchanged_page_scores_high_and_a_changed_element_is_found(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    url = _page(workspace, "landing.html", "#1f4e9c")
    baseline = _baseline(workspace, ns_backend, url)
    same = _diff(workspace, ns_backend, baseline=baseline, url=url)
    assert same["ssim"] >= 0.99
    assert same["changed"] is False
    assert same["regions"] == []
    assert same["candidate_path"].startswith(".synthorg/screenshots/")
    # The same page with the banner in another colour.
    _page(workspace, "landing.html", "#f0a030")
    changed = _diff(workspace, ns_backend, baseline=baseline, url=url)
    assert changed["ssim"] < 0.99
    assert changed["changed"] is True
    assert len(changed["regions"]) == 1, changed["regions"]
    region = changed["regions"][0]
    x, y, width, height = BANNER
    assert abs(region["x"] - x) <= 2 and abs(region["y"] - y) <= 2, region
    assert abs(region["width"] - width) <= 4 and abs(region["height"] - height) <= 4, region
    diff_file = workspace / changed["diff_path"]
    assert changed["diff_path"].startswith(".synthorg/screenshots/")
    assert diff_file.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert not diff_file.is_symlink()
    # The two screenshots compared directly give the same verdict both ways.
    again = _diff(workspace, ns_backend, baseline=changed["candidate_path"], candidate=baseline)
    assert again["changed"] is True and len(again["regions"]) == 1
    itself = _diff(workspace, ns_backend, baseline=baseline, candidate=baseline)
    assert itself["ssim"] == 1.0 and itself["changed"] is False


def test_a_baseline_outside_the_workspace_or_behind_a_link_is_refused(
    workspace: Path, ns_backend: NamespaceSandbox, outside_dir: Path
) -> None:
    url = _page(workspace, "landing.html", "#1f4e9c")
    baseline = _baseline(workspace, ns_backend, url)
    outside_png = outside_dir / "outside.png"
    outside_png.write_bytes((workspace / baseline).read_bytes())
    outside_png.chmod(0o644)
    (workspace / "inside-link.png").symlink_to(workspace / baseline)
    (workspace / "relative-link.png").symlink_to(baseline)
    (workspace / "outside-link.png").symlink_to(outside_png)
    (workspace / "shots").symlink_to(outside_dir)
    counting = CountingSandbox(ns_backend)
    context = make_context(workspace, counting)
    for path in (
        str(outside_png),
        f"../{outside_dir.name}/outside.png",
        "/etc/passwd",
        "inside-link.png",
        "relative-link.png",
        "outside-link.png",
        "shots/outside.png",
        "~/outside.png",
    ):
        for arguments in (
            {"baseline": path, "candidate": baseline},
            {"baseline": baseline, "candidate": path},
        ):
            with pytest.raises(ToolRefusedError) as refused:
                browser_diff.run(context, arguments)
            assert refused.value.code is RefusalCode.PATH_NOT_REACHABLE, (path, refused.value)
    assert counting.specs == []
    # Control: the file itself, by its own path, is compared (and the diff saved).
    same = browser_diff.run(context, {"baseline": baseline, "candidate": baseline})
    assert same.structured is not None and same.structured["changed"] is False
    assert len(counting.specs) == 1


def test_files_that_are_not_pictures_and_bad_arguments_are_refused(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    url = _page(workspace, "landing.html", "#1f4e9c")
    baseline = _baseline(workspace, ns_backend, url)
    context = make_context(workspace, ns_backend)
    for arguments in (
        {"baseline": "hello.txt", "candidate": baseline},
        {"baseline": baseline},
        {"baseline": baseline, "candidate": baseline, "url": url},
        {"baseline": baseline, "candidate": baseline, "threshold": 0},
    ):
        with pytest.raises(ToolRefusedError) as refused:
            browser_diff.run(context, arguments)
        assert refused.value.code is RefusalCode.INVALID_ARGUMENT, arguments
    with pytest.raises(ToolFailedError) as missing:
        browser_diff.run(context, {"baseline": "nothing.png", "candidate": baseline})
    assert missing.value.code == "NOT_FOUND"
    # Control: a well-formed call with a threshold of its own.
    done = browser_diff.run(context, {"baseline": baseline, "url": url, "threshold": 0.5})
    assert done.structured is not None and done.structured["changed"] is False


def test_a_planted_link_in_place_of_the_screenshot_directory_is_not_followed(
    workspace: Path, ns_backend: NamespaceSandbox, outside_dir: Path
) -> None:
    url = _page(workspace, "landing.html", "#1f4e9c")
    baseline = _baseline(workspace, ns_backend, url)
    kept = workspace / "kept.png"
    kept.write_bytes((workspace / baseline).read_bytes())
    shots = workspace / ".synthorg" / "screenshots"
    os.rename(shots, workspace / ".synthorg" / "old")
    shots.symlink_to(outside_dir)
    context = make_context(workspace, ns_backend)
    with pytest.raises(ToolRefusedError) as refused:
        browser_diff.run(context, {"baseline": "kept.png", "candidate": "kept.png"})
    assert refused.value.code is RefusalCode.PATH_NOT_REACHABLE
    assert sorted(p.name for p in outside_dir.iterdir()) == ["secret.txt"]
    # Control: with the directory back, the diff picture is saved there.
    shots.unlink()
    done = _diff(workspace, ns_backend, baseline="kept.png", candidate="kept.png")
    assert (workspace / done["diff_path"]).is_file()
