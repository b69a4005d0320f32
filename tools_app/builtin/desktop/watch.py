"""A person at an agent's desktop, from the worker's side: a fresh picture of the session
for the agent's page, and a person's click, typing or keys sent to the session.

Both reach the session the way the agent's own calls do (its place on this machine, from
the agent's id and workspace), with the same argument checks; a capture is no use of
the session (its idle time goes on), so a page left open does not keep it standing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from common.config.desktop import DesktopSection
from tools_app.builtin.base import ToolFailedError
from tools_app.builtin.desktop.arguments import (
    checked_keys,
    checked_point,
    checked_text,
    refuse,
)
from tools_app.builtin.desktop.inside.host import typing_seconds
from tools_app.builtin.desktop.screenshots import png_size, read_screenshot
from tools_app.builtin.desktop.session import (
    NOT_RUNNING,
    DesktopSessionError,
    ask,
    live,
    runtime_root,
    session_place,
)

# One file, written again by each capture: watching leaves no trail of pictures behind.
WATCH_NAME: Final = "watch-live.png"
WATCH_PATH: Final = f".synthorg/screenshots/{WATCH_NAME}"
BUTTONS: Final = ("left", "middle", "right")


@dataclass(frozen=True, slots=True)
class LiveCapture:
    """What the session shows now; ``data`` is None when no session stands."""

    data: bytes | None
    sha256: str = ""
    width: int = 0
    height: int = 0


def checked_person_request(section: DesktopSection, fields: dict[str, Any]) -> dict[str, Any]:
    """A person's action as the session's request, checked as an agent's call is."""
    action = fields.get("action")
    if action == "click":
        x, y = checked_point(fields.get("x"), fields.get("y"), section.width, section.height)
        button = fields.get("button") or "left"
        if button not in BUTTONS:
            raise refuse("button must be left, middle or right")
        return {"action": "click", "x": x, "y": y, "button": button, "double": False}
    if action == "type":
        return {"action": "type", "text": checked_text(fields.get("text"), section.max_text_chars)}
    if action == "key":
        keys = fields.get("keys")
        if isinstance(keys, list):  # checked once already: the combos, in order
            keys = " ".join(str(combo) for combo in keys)
        return {"action": "key", "keys": checked_keys(keys)}
    raise refuse("action must be click, type or key")


def _place_of(section: DesktopSection, agent_id: str, workspace: Path) -> Any:
    try:
        return session_place(runtime_root(section.runtime_dir), agent_id, workspace)
    except OSError as exc:
        raise DesktopSessionError(NOT_RUNNING, f"the workspace is not reachable: {exc}") from exc


def live_capture(section: DesktopSection, agent_id: str, workspace: Path) -> LiveCapture:
    """A picture of the agent's session now, read back as the agent's own screenshots are."""
    place = _place_of(section, agent_id, workspace)
    if not live(place):
        return LiveCapture(None)
    try:
        answer = ask(
            place,
            {"action": "screenshot", "name": WATCH_NAME},
            timeout=section.call_timeout_seconds,
            touch=False,
        )
    except DesktopSessionError as exc:
        if exc.code == NOT_RUNNING:
            return LiveCapture(None)
        raise
    if not answer.get("ok") or answer.get("path") != WATCH_PATH:
        if answer.get("code") == NOT_RUNNING:
            return LiveCapture(None)
        raise DesktopSessionError(
            str(answer.get("code") or "DESKTOP_FAILED"),
            str(answer.get("message") or "the desktop saved no picture"),
        )
    try:
        data = read_screenshot(workspace, WATCH_PATH)
        width, height = png_size(data)
    except ToolFailedError as exc:
        raise DesktopSessionError(exc.code, str(exc)) from exc
    return LiveCapture(data, hashlib.sha256(data).hexdigest(), width, height)


def person_act(
    section: DesktopSection, agent_id: str, workspace: Path, request: dict[str, Any]
) -> dict[str, Any]:
    """Send a person's checked action to the agent's session; its answer (raises with the
    session's code when it fails)."""
    request = checked_person_request(section, request)
    extra = 0.0
    if request["action"] == "type":
        extra = typing_seconds(len(request["text"]), section.type_delay_ms)
    answer = ask(
        _place_of(section, agent_id, workspace),
        request,
        timeout=section.call_timeout_seconds + extra,
    )
    if not answer.get("ok"):
        raise DesktopSessionError(
            str(answer.get("code") or "DESKTOP_FAILED"),
            str(answer.get("message") or "the desktop failed"),
        )
    return answer
