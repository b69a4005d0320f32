"""The sandbox image: built from a cached debootstrap root filesystem when offline."""

from __future__ import annotations

from common.vocabulary.sandbox import SANDBOX_IMAGE
from tools_app.sandbox.backends.docker.image import (
    apt_mirror,
    build_sandbox_image,
    default_cache_dir,
    rootfs_tarball_path,
)


def test_image_is_present_after_a_build(docker_client):
    report = build_sandbox_image(client=docker_client)
    assert report.method in ("present", "rootfs", "dockerfile")
    assert build_sandbox_image(client=docker_client).method == "present"


def test_offline_rebuild_reuses_the_cached_root_filesystem(docker_client):
    mirror = apt_mirror()
    assert mirror, "the machine's apt sources name a mirror"
    tag = "synthorg-sandbox:test-rebuild"
    try:
        report = build_sandbox_image(client=docker_client, tag=tag, force=True, use_registry=False)
        assert report.method == "rootfs"
        assert rootfs_tarball_path(default_cache_dir(), mirror).exists()
        config = docker_client.images.get(tag).attrs["Config"]
        assert config["User"] == "10001:10001" and config["WorkingDir"] == "/workspace"
        out = docker_client.containers.run(
            tag,
            ["sh", "-c", "id -u; python3 -c 'print(1)'; git --version; bash --version | head -1"],
            remove=True,
            network_mode="none",
        ).decode()
        lines = out.splitlines()
        assert lines[0] == "10001" and lines[1] == "1"
        assert lines[2].startswith("git version") and "bash" in lines[3]
    finally:
        docker_client.images.remove(tag, force=True)


def test_the_default_tag_carries_the_version():
    assert SANDBOX_IMAGE.startswith("synthorg-sandbox:") and not SANDBOX_IMAGE.endswith(":latest")


def test_the_gui_image_holds_the_browser_and_desktop_programs_and_the_plain_one_not(
    docker_client,
):
    from common.config.browser import DEFAULT_CHROMIUM
    from common.config.desktop import DesktopSection
    from common.vocabulary.sandbox import SANDBOX_GUI_IMAGE
    from tools_app.sandbox.backends.docker.image import build_gui_image, gui_tarball_path

    report = build_gui_image(client=docker_client)
    assert report.method in ("present", "rootfs")
    assert build_gui_image(client=docker_client).method == "present"
    mirror = apt_mirror()
    assert mirror
    base = rootfs_tarball_path(default_cache_dir(), mirror)
    assert gui_tarball_path(default_cache_dir(), base).exists()
    section = DesktopSection()
    programs = [DEFAULT_CHROMIUM, section.xvfb_path, section.xdotool_path, section.scrot_path]
    programs += ["/usr/bin/xterm", "/usr/bin/xmessage", "/usr/bin/prlimit"]
    check = "id -u; for p in " + " ".join(programs) + '; do [ -x "$p" ] && echo "$p"; done'
    found = docker_client.containers.run(
        SANDBOX_GUI_IMAGE, ["sh", "-c", check], remove=True, network_mode="none"
    ).decode()
    assert found.splitlines() == ["10001", *programs]
    # Control: the plain image, which every other call uses, stays without them.
    plain = docker_client.containers.run(
        SANDBOX_IMAGE, ["sh", "-c", check], remove=True, network_mode="none"
    ).decode()
    assert plain.splitlines() == ["10001", "/usr/bin/prlimit"]
