"""The pictures a call waiting for a person depends on, for its card.

A call whose arguments name a picture in the workspace (``browser_diff``'s baseline,
a ``file://`` page that is a screenshot, a chart a report embeds...) shows that
picture when the same agent's earlier call kept it: the audit row of that call names
its path and SHA-256, and the file is shown only while it is still those bytes (read
without following links, never waiting on a FIFO). A ``mockup_render`` asked about
with ``svg`` shows the SVG it would draw, as an image only (served sandboxed: an SVG
can carry script).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote, urlsplit

from approvals_app.selectors.desktop_pictures import last_screen
from audit_app.models import AuditEvent
from tools_app.builtin.pictures import (
    PICTURE_FOLDERS,
    STORED,
    SVG,
    KeptPicture,
    PictureCheck,
    PictureState,
    kept_pictures,
    picture_check,
    svg_check,
    workspace_relative,
)

PICTURE_SUFFIXES: Final = (".png", ".jpg", ".jpeg", ".webp", ".svg")
SANDBOX_WORKSPACE: Final = "/workspace/"
# A card shows at most this many pictures, and looks this far back in the agent's rows.
MAX_CARD_PICTURES: Final = 4
RECENT_ROWS: Final = 500


@dataclass(frozen=True, slots=True)
class CardPicture:
    """A picture the call depends on: the argument that names it, and how it stands."""

    argument: str
    check: PictureCheck
    # The audit row that recorded it (None: the picture is the call's own argument).
    event_id: int | None

    @property
    def shown(self) -> bool:
        return self.check.shown

    @property
    def path(self) -> str:
        return self.check.picture.path


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            if isinstance(item, str):
                yield item


def _named_paths(invocation: Any) -> list[tuple[str, str]]:
    """``(argument, workspace-relative path)`` of each picture file the arguments name, as
    a path or as a ``file:///workspace/...`` page (whatever the argument's role: a name
    counts only when an earlier row of the agent kept a picture there)."""
    arguments = invocation.arguments if isinstance(invocation.arguments, dict) else {}
    workspace = invocation.agent.workspace or ""
    named: list[tuple[str, str]] = []
    for name, value in arguments.items():
        for text in _strings(value):
            if text[:5].lower() == "file:":
                parts = urlsplit(text)
                path = unquote(parts.path)
                if parts.netloc not in ("", "localhost") or not path.startswith(SANDBOX_WORKSPACE):
                    continue
                text = path[len(SANDBOX_WORKSPACE) :]
            relative = workspace_relative(workspace, text) if workspace else None
            if relative is not None and relative.lower().endswith(PICTURE_SUFFIXES):
                named.append((str(name), relative))
    return named[:MAX_CARD_PICTURES]


def _recorded(agent_id: Any, paths: set[str]) -> dict[str, tuple[int, KeptPicture]]:
    """The newest row of the agent's recent ones that kept each of ``paths``."""
    rows = (
        AuditEvent.objects.filter(agent_id=agent_id, kind__in=list(PICTURE_FOLDERS), outcome=STORED)
        .order_by("-id")
        .only("id", "kind", "outcome", "data")[:RECENT_ROWS]
    )
    found: dict[str, tuple[int, KeptPicture]] = {}
    for row in rows:
        for picture in kept_pictures(row.kind, row.outcome, row.data):
            if picture.path in paths and picture.path not in found:
                found[picture.path] = (row.id, picture)
        if len(found) == len(paths):
            break
    return found


def card_pictures(invocation: Any) -> tuple[CardPicture, ...]:
    """The pictures ``invocation``'s call depends on, each checked against its file now."""
    shown: list[CardPicture] = []
    screen = last_screen(invocation)
    if screen is not None:
        shown.append(CardPicture(screen.picture.label, screen, None))
    svg = (invocation.arguments or {}).get("svg") if invocation.tool == "mockup_render" else None
    if isinstance(svg, str):
        data = svg.encode("utf-8")
        picture = KeptPicture("asked", "svg", hashlib.sha256(data).hexdigest(), SVG)
        shown.append(CardPicture("svg", svg_check(picture, data), None))
    named = _named_paths(invocation)
    if not named:
        return tuple(shown)
    recorded = _recorded(invocation.agent_id, {path for _, path in named})
    workspace = invocation.agent.workspace
    for argument, path in named:
        if path not in recorded:
            if not os.path.lexists(os.path.join(workspace or "", path)):
                continue  # a name in the arguments, no file: nothing to show or to warn of
            unknown = KeptPicture("", path, "0" * 64, SVG if path.endswith(".svg") else "")
            note = "no earlier call of this agent recorded this picture: not shown"
            check = PictureCheck(unknown, PictureState.REFUSED, note)
            shown.append(CardPicture(argument, check, None))
            continue
        event_id, picture = recorded[path]
        shown.append(CardPicture(argument, picture_check(workspace, picture), event_id))
    return tuple(shown)
