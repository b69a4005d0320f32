"""The screen a desktop call's agent last saw, for the call's card.

A click, typing, keys or a scroll acts on whatever the screen shows: the card shows
the agent's newest ``desktop_screenshot`` taken before this call, by the path and
SHA-256 its result recorded, and only while the file there is still those bytes
(read without following links, never waiting on a FIFO).
"""

from __future__ import annotations

import re
from typing import Any, Final

from tools_app.builtin.pictures import KeptPicture, PictureCheck, picture_check
from tools_app.models import Invocation, InvocationStatus

DESKTOP_ACTS: Final = frozenset({"desktop_click", "desktop_type", "desktop_key", "desktop_scroll"})
SCREENSHOT_TOOL: Final = "desktop_screenshot"
SCREENSHOT_FOLDER: Final = ".synthorg/screenshots/"
LABEL: Final = "the screen the agent last saw"
_DIGEST: Final = re.compile(r"[0-9a-f]{64}")


def _recorded(structured: Any) -> tuple[str, str] | None:
    if not isinstance(structured, dict):
        return None
    path, digest = structured.get("path"), structured.get("sha256")
    if not isinstance(path, str) or not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        return None
    if not path.startswith(SCREENSHOT_FOLDER) or any(
        part in ("", ".", "..") for part in path.split("/")
    ):
        return None
    return path, digest


def last_screen(invocation: Any) -> PictureCheck | None:
    """The agent's last screenshot before ``invocation`` as its file stands now, when
    ``invocation`` is a desktop action and one was taken."""
    if invocation.tool not in DESKTOP_ACTS:
        return None
    shot = (
        Invocation.objects.filter(
            agent_id=invocation.agent_id,
            tool=SCREENSHOT_TOOL,
            status=InvocationStatus.SUCCEEDED,
            created_at__lte=invocation.created_at,
        )
        .order_by("-created_at")
        .only("structured")
        .first()
    )
    recorded = _recorded(shot.structured) if shot is not None else None
    if recorded is None:
        return None
    picture = KeptPicture(LABEL, recorded[0], recorded[1], "image/png")
    return picture_check(invocation.agent.workspace, picture)
