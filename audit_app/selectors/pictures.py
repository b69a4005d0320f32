"""The picture a design tool kept, as its audit row names it: path and SHA-256.

A picture is read from the agent's workspace without following links, as a regular
file (the reader the MCP picture uses), and given out only when its bytes have the
digest the audit row recorded and their headers say PNG, JPEG or WebP: a file changed
or swapped since the call is not shown.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final

from audit_app.models import AuditEvent
from tools_app.builtin.base import ToolFailedError
from tools_app.builtin.design.formats import PictureFormatError, picture_format
from tools_app.builtin.desktop.screenshots import read_screenshot
from trust_app.models import Agent

# The audit rows that name a picture, and the one folder each keeps its pictures in.
PICTURE_EVENTS: Final = MappingProxyType(
    {
        "design.image_generate": ".synthorg/images/",
        "design.mockup_render": ".synthorg/mockups/",
    }
)
MAX_SHOWN_BYTES: Final = 16 * 1024 * 1024
_DIGEST: Final = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class EventPicture:
    """Where the picture of an audit row is (relative to the agent's workspace)."""

    path: str
    sha256: str


@dataclass(frozen=True, slots=True)
class PictureBytes:
    data: bytes
    media_type: str


def event_picture(event: AuditEvent) -> EventPicture | None:
    """The picture ``event`` names, when it is a design row that kept one."""
    folder = PICTURE_EVENTS.get(event.kind)
    data = event.data or {}
    path, digest = data.get("path"), data.get("sha256")
    if folder is None or event.outcome != "stored" or event.agent_id is None:
        return None
    if not isinstance(path, str) or not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        return None
    if not path.startswith(folder) or any(p in ("", ".", "..") for p in path.split("/")):
        return None
    return EventPicture(path, digest)


def event_picture_bytes(event: AuditEvent) -> PictureBytes | None:
    """The bytes of ``event``'s picture and their media type; None when there is none, it
    cannot be read, or it is not the picture the row recorded."""
    picture = event_picture(event)
    if picture is None:
        return None
    agent_id = event.agent_id
    agent = Agent.objects.filter(id=agent_id).first() if agent_id is not None else None
    if agent is None or not agent.workspace:
        return None
    try:
        data = read_screenshot(Path(agent.workspace), picture.path)
    except (ToolFailedError, OSError):
        return None
    if len(data) > MAX_SHOWN_BYTES or hashlib.sha256(data).hexdigest() != picture.sha256:
        return None
    try:
        media_type = picture_format(data).media_type
    except PictureFormatError:
        return None
    return PictureBytes(data, media_type)
