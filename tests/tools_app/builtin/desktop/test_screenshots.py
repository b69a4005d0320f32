"""A desktop screenshot is read back from the workspace without following links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools_app.builtin.base import ToolFailedError
from tools_app.builtin.desktop.screenshots import png_size, read_screenshot

PNG = (
    b"\x89PNG\r\n\x1a\n"
    + b"\x00\x00\x00\rIHDR"
    + (640).to_bytes(4, "big")
    + (480).to_bytes(4, "big")
    + b"\x08\x02\x00\x00\x00"
)


def test_a_screenshot_is_read_without_following_links(tmp_path: Path) -> None:
    folder = tmp_path / ".synthorg" / "screenshots"
    folder.mkdir(parents=True)
    (folder / "real.png").write_bytes(PNG)
    assert png_size(read_screenshot(tmp_path, ".synthorg/screenshots/real.png")) == (640, 480)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.png"
    outside.write_bytes(PNG)
    os.symlink(outside, folder / "link.png")
    with pytest.raises(ToolFailedError):
        read_screenshot(tmp_path, ".synthorg/screenshots/link.png")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.png").write_bytes(PNG)
    os.symlink(elsewhere, tmp_path / "linked")
    with pytest.raises(ToolFailedError):
        read_screenshot(tmp_path, "linked/x.png")
