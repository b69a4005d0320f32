"""A screenshot's picture joins its MCP result only as the bytes the result names."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import mcp_types as types

from tools_app.mcp.pictures import with_picture

PICTURE = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def _result(path: str, data: bytes, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text="saved")],
        structured_content={"path": path, "sha256": hashlib.sha256(data).hexdigest()},
        is_error=is_error,
    )


def _pictures(result: types.CallToolResult) -> list[bytes]:
    return [
        base64.b64decode(block.data)
        for block in result.content
        if isinstance(block, types.ImageContent) and block.mime_type == "image/png"
    ]


def test_the_named_picture_is_added_and_nothing_else(tmp_path: Path) -> None:
    folder = tmp_path / ".synthorg" / "screenshots"
    folder.mkdir(parents=True)
    (folder / "a.png").write_bytes(PICTURE)
    path = ".synthorg/screenshots/a.png"
    shown = with_picture(_result(path, PICTURE), tool="desktop_screenshot", workspace=str(tmp_path))
    assert _pictures(shown) == [PICTURE]
    # A file changed since the call, a link, another tool, a failed call: no picture.
    changed = with_picture(
        _result(path, PICTURE + b"x"), tool="desktop_screenshot", workspace=str(tmp_path)
    )
    assert _pictures(changed) == []
    outside = tmp_path.parent / f"{tmp_path.name}-secret.png"
    outside.write_bytes(PICTURE)
    os.symlink(outside, folder / "link.png")
    linked = _result(".synthorg/screenshots/link.png", PICTURE)
    assert _pictures(with_picture(linked, tool="desktop_screenshot", workspace=str(tmp_path))) == []
    for tool, result in (
        ("read_file", _result(path, PICTURE)),
        ("desktop_screenshot", _result(path, PICTURE, is_error=True)),
        ("desktop_screenshot", _result("notes/a.png", PICTURE)),
    ):
        assert _pictures(with_picture(result, tool=tool, workspace=str(tmp_path))) == []


def test_a_design_picture_is_added_from_its_own_folder_with_its_media_type(
    tmp_path: Path,
) -> None:
    jpeg = b"\xff\xd8\xff\xe0" + b"\x00" * 64
    folder = tmp_path / ".synthorg" / "images"
    folder.mkdir(parents=True)
    (folder / "a.jpg").write_bytes(jpeg)
    result = _result(".synthorg/images/a.jpg", jpeg)
    assert isinstance(result.structured_content, dict)
    result.structured_content["media_type"] = "image/jpeg"
    shown = with_picture(result, tool="image_generate", workspace=str(tmp_path))
    added = [b for b in shown.content if isinstance(b, types.ImageContent)]
    assert [(b.mime_type, base64.b64decode(b.data)) for b in added] == [("image/jpeg", jpeg)]
    # The same file named by another tool's result, or with a media type no picture has:
    # no picture.
    assert not [
        b
        for b in with_picture(result, tool="mockup_render", workspace=str(tmp_path)).content
        if isinstance(b, types.ImageContent)
    ]
    result.structured_content["media_type"] = "text/html"
    odd = with_picture(result, tool="image_generate", workspace=str(tmp_path))
    assert not [b for b in odd.content if isinstance(b, types.ImageContent)]
