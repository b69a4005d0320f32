"""A picture tool's picture, added to its MCP result as image content.

``browser_screenshot``, ``desktop_screenshot`` and the design tools (``mockup_render``,
``image_generate``) keep their picture in the agent's workspace and name it with its
SHA-256; an MCP client also gets the picture itself.
It is read from that agent's workspace without following links, and added only when
the bytes read are the ones the result names (a file changed since is left out).
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from types import MappingProxyType
from typing import Final

import mcp_types as types

from tools_app.builtin.base import ToolFailedError
from tools_app.builtin.desktop.screenshots import read_screenshot
from trust_app.policy import name_key

PICTURE_FOLDER: Final = ".synthorg/screenshots/"
# Each picture tool and the one folder its pictures are kept in.
PICTURE_FOLDERS: Final = MappingProxyType(
    {
        "browser_screenshot": PICTURE_FOLDER,
        "desktop_screenshot": PICTURE_FOLDER,
        "mockup_render": ".synthorg/mockups/",
        "image_generate": ".synthorg/images/",
    }
)
PICTURE_TOOLS: Final = frozenset(PICTURE_FOLDERS)
MEDIA_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/webp"})
MAX_PICTURE_BYTES: Final = 8 * 1024 * 1024


def shows_picture(result: types.CallToolResult, tool: str) -> bool:
    """True for a screenshot tool's successful result (whose picture may be added)."""
    return not result.is_error and name_key(tool) in PICTURE_TOOLS


def with_picture(
    result: types.CallToolResult, *, tool: str, workspace: str
) -> types.CallToolResult:
    """``result`` with the screenshot it names as image content, when it names one."""
    structured = result.structured_content
    if not shows_picture(result, tool) or not isinstance(structured, dict):
        return result
    path, digest = structured.get("path"), structured.get("sha256")
    folder = PICTURE_FOLDERS[name_key(tool)]
    if not isinstance(path, str) or not path.startswith(folder) or "/../" in path:
        return result
    media_type = structured.get("media_type", "image/png")
    if media_type not in MEDIA_TYPES:
        return result
    try:
        data = read_screenshot(Path(workspace), path)
    except ToolFailedError:
        return result
    if len(data) > MAX_PICTURE_BYTES or hashlib.sha256(data).hexdigest() != digest:
        return result
    picture = types.ImageContent(
        type="image", data=base64.b64encode(data).decode("ascii"), mime_type=str(media_type)
    )
    return result.model_copy(update={"content": [*result.content, picture]})
