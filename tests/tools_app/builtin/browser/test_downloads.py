"""Downloads of ``browser_navigate``, run directly on the real namespace sandbox.

A page in the workspace makes the browser download files (``<a download>`` of a
``data:`` URL, of a workspace file, of a file outside it). What is kept lands under
``.synthorg/downloads/`` with its SHA-256, held to the workspace quota; a name that
tries to climb out, a download past the quota or past the count, a ``file:`` download
from outside the workspace and a planted link are refused. Each attack has its control.
The pipeline tests (``test_pipeline``) download over HTTP through the egress proxy.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from common.settings_config import config_reload
from tests.tools_app.builtin.fs_fixtures import grant, make_context
from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolRefusedError
from tools_app.builtin.browser.driving import keep_downloads
from tools_app.builtin.browser.inside.driver import download_name
from tools_app.builtin.browser.tools import browser_navigate
from tools_app.quota.guard import guard_workspace
from tools_app.quota.usage import workspace_usage
from tools_app.sandbox.backends.namespace import NamespaceSandbox

pytestmark = [pytest.mark.integration]

DOWNLOADS = ".synthorg/downloads"


@pytest.fixture(autouse=True)
def browser_config(tmp_path: Path) -> Iterator[None]:
    """This process's config has a ``browser`` section with room for two downloads."""
    path = tmp_path / "synthorg.yaml"
    path.write_text(json.dumps({"browser": {"default_timeout_seconds": 60, "max_downloads": 2}}))
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()
    yield


def _data_link(name: str, data: bytes) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    return (
        f'<a href="data:application/octet-stream;base64,{encoded}" '
        f'download="{html.escape(name, quote=True)}">get</a>'
    )


def _blob_link(name: str, size: int) -> str:
    """A link to ``size`` bytes the page makes itself (the page stays small)."""
    return (
        f'<a id="blob" download="{name}">get</a><script>'
        f"document.getElementById('blob').href = URL.createObjectURL("
        f"new Blob([new Uint8Array({size}).fill(7)]));</script>"
    )


def _page(workspace: Path, name: str, links: list[str]) -> str:
    """A page that clicks each of its download links once it has loaded."""
    body = (
        "<title>Files</title><p>files</p>"
        + "".join(links)
        + "<script>for (const a of document.querySelectorAll('a')) a.click();</script>"
    )
    (workspace / name).write_text(body)
    (workspace / name).chmod(0o644)
    return f"file:///workspace/{name}"


def _kept(workspace: Path) -> list[str]:
    folder = workspace / DOWNLOADS
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_download_is_kept_in_the_workspace_with_its_digest(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    data = b"quarterly figures\n" * 100
    url = _page(workspace, "one.html", [_data_link("figures.csv", data)])
    result = browser_navigate.run(
        make_context(workspace, ns_backend), {"url": url, "wait_until": "networkidle"}
    )
    assert result.structured is not None
    (kept,) = result.structured["downloads"]
    assert kept["path"] == f"{DOWNLOADS}/figures.csv"
    assert kept["sha256"] == hashlib.sha256(data).hexdigest()
    assert kept["bytes"] == len(data)
    assert kept["url"].startswith("data:")
    assert (workspace / kept["path"]).read_bytes() == data
    assert "downloaded" in result.content and kept["path"] in result.content
    # The same file again keeps its digest in the name beside the first.
    again = browser_navigate.run(
        make_context(workspace, ns_backend), {"url": url, "wait_until": "networkidle"}
    )
    assert again.structured is not None
    assert again.structured["downloads"][0]["path"] == (
        f"{DOWNLOADS}/figures-{hashlib.sha256(data).hexdigest()[:12]}.csv"
    )
    # A page without downloads answers none.
    plain = workspace / "plain.html"
    plain.write_text("<title>Plain</title><p>plain</p>")
    plain.chmod(0o644)
    answered = browser_navigate.run(
        make_context(workspace, ns_backend), {"url": "file:///workspace/plain.html"}
    )
    assert answered.structured is not None and "downloads" not in answered.structured


@pytest.mark.parametrize(
    "suggested",
    [
        "../../../../etc/cron.d/evil",
        "..\\..\\evil.sh",
        "/etc/passwd",
        ".bashrc",
        "..",
        "report\u202egnp.exe",
        "a\nb\x00c.txt",
    ],
)
def test_a_name_that_climbs_or_hides_is_made_plain(
    workspace: Path, ns_backend: NamespaceSandbox, suggested: str
) -> None:
    url = _page(workspace, "climb.html", [_data_link(suggested, b"payload")])
    result = browser_navigate.run(
        make_context(workspace, ns_backend), {"url": url, "wait_until": "networkidle"}
    )
    assert result.structured is not None
    (kept,) = result.structured["downloads"]
    name = kept["path"].removeprefix(f"{DOWNLOADS}/")
    assert "/" not in name and not name.startswith(".")
    assert all(ch.isprintable() and ch not in "\u202e\u202d" for ch in name), name
    assert (workspace / kept["path"]).read_bytes() == b"payload"
    # Nothing was written anywhere else in the workspace or above it.
    assert sorted(p.name for p in workspace.iterdir()) == [".synthorg", "climb.html", "hello.txt"]
    assert not (workspace.parent / "evil").exists() and not Path("/etc/cron.d/evil").exists()
    assert name == download_name(name)


@pytest.mark.parametrize(
    ("suggested", "expected"),
    [
        ("../../../../etc/cron.d/evil", "evil"),
        ("..\\..\\evil.sh", "evil.sh"),
        ("/etc/passwd", "passwd"),
        (".bashrc", "bashrc"),
        ("..", "download"),
        ("report\u202egnp.exe", "report_gnp.exe"),
        ("a\nb\x00c.txt", "a_b_c.txt"),
    ],
)
def test_the_worker_keeps_a_download_by_its_plain_name_whatever_it_is_handed(
    workspace: Path, ns_backend: NamespaceSandbox, suggested: str, expected: str
) -> None:
    """The browser makes names plain too; here the worker's keeping is handed the raw
    name, as if that wall had failed."""
    data = b"payload " + suggested.encode()
    answered = [
        {
            "url": "https://files.invalid/x",
            "name": suggested,
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "data": base64.b64encode(data).decode("ascii"),
        }
    ]
    (kept,) = keep_downloads(make_context(workspace, ns_backend), answered)
    assert kept["path"] == f"{DOWNLOADS}/{expected}"
    assert (workspace / kept["path"]).read_bytes() == data
    assert sorted(p.name for p in workspace.iterdir()) == [".synthorg", "hello.txt"]


def test_download_names_keep_their_extension_and_have_a_fallback() -> None:
    assert download_name("report.pdf") == "report.pdf"
    assert download_name("x" * 300 + ".tar.gz").endswith(".gz")
    assert len(download_name("x" * 300 + ".pdf").encode()) <= 120
    assert download_name("") == "download"
    assert download_name("../..") == "download"
    assert download_name("…\u200b") != ""


def test_a_download_past_the_quota_is_refused_and_nothing_kept(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    used = workspace_usage(workspace).total
    guarded = guard_workspace(ns_backend, quota_bytes=used + 96 * 1024)
    context = make_context(workspace, guarded)
    url = _page(workspace, "big.html", [_blob_link("big.bin", 200 * 1024)])
    with pytest.raises(ToolRefusedError) as refused:
        browser_navigate.run(context, {"url": url, "wait_until": "networkidle"})
    assert refused.value.code is RefusalCode.LIMIT_EXCEEDED
    assert "workspace_quota" in refused.value.reason, refused.value.reason
    assert _kept(workspace) == []
    # Control: a download that fits is kept under the same quota.
    small = _page(workspace, "small.html", [_data_link("small.bin", b"s" * 1024)])
    result = browser_navigate.run(context, {"url": small, "wait_until": "networkidle"})
    assert result.structured is not None
    assert [d["path"] for d in result.structured["downloads"]] == [f"{DOWNLOADS}/small.bin"]


def test_downloads_past_the_count_are_not_kept(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    links = [_data_link(f"f{i}.txt", f"file {i}".encode()) for i in range(5)]
    result = browser_navigate.run(
        make_context(workspace, ns_backend),
        {"url": _page(workspace, "many.html", links), "wait_until": "networkidle"},
    )
    assert result.structured is not None
    assert len(result.structured["downloads"]) == 2
    assert len(_kept(workspace)) == 2
    assert "3 more download(s) were not kept: browser.max_downloads is 2" in result.content


def test_a_file_download_from_outside_the_workspace_is_refused(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    """A file: link with ``download`` is followed as a page (the browser downloads no
    file: URL for a file: page), and a page outside the workspace is refused."""
    (workspace / "linked.txt").symlink_to("/etc/hostname")
    grant(workspace)
    context = make_context(workspace, ns_backend)
    for target in ("file:///usr/share/common-licenses/GPL-3", "linked.txt"):
        url = _page(workspace, "out.html", [f'<a href="{target}" download="x.txt">x</a>'])
        with pytest.raises(ToolRefusedError) as refused:
            browser_navigate.run(context, {"url": url, "wait_until": "networkidle"})
        assert refused.value.code is RefusalCode.PATH_NOT_REACHABLE, target
    assert _kept(workspace) == []
    # Control: a workspace file is read the same way.
    url = _page(workspace, "in.html", ['<a href="hello.txt" download="copy.txt">x</a>'])
    result = browser_navigate.run(context, {"url": url, "wait_until": "networkidle"})
    assert result.structured is not None
    assert "hello from the workspace" in result.structured["text"]
    # Were such a download answered anyway, the worker refuses to keep it.
    data = b"root:x:0:0"
    answered = [
        {
            "url": "file:///workspace/../etc/passwd",
            "name": "passwd",
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "data": base64.b64encode(data).decode("ascii"),
        }
    ]
    with pytest.raises(ToolRefusedError) as refused:
        keep_downloads(context, answered)
    assert refused.value.code is RefusalCode.PATH_NOT_REACHABLE
    assert _kept(workspace) == []


def test_a_planted_link_for_the_downloads_folder_is_refused(
    workspace: Path, ns_backend: NamespaceSandbox
) -> None:
    (workspace / ".synthorg").mkdir()
    (workspace / DOWNLOADS).symlink_to("/tmp")
    grant(workspace)
    context = make_context(workspace, ns_backend)
    url = _page(workspace, "planted.html", [_data_link("x.txt", b"x")])
    with pytest.raises((ToolRefusedError, ToolFailedError)) as refused:
        browser_navigate.run(context, {"url": url, "wait_until": "networkidle"})
    assert "not a plain directory" in str(refused.value)
    # Control: with a plain directory the file is kept there.
    (workspace / DOWNLOADS).unlink()
    result = browser_navigate.run(context, {"url": url, "wait_until": "networkidle"})
    assert result.structured is not None
    assert (workspace / result.structured["downloads"][0]["path"]).read_bytes() == b"x"
