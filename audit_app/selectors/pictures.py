"""The pictures an audit row names (a screenshot, a diff, a chart, a design), as they
stand now in the agent's workspace.

Each is read without following links, as a regular file (``tools_app.builtin.pictures``),
and given out only when its bytes have the digest the row recorded and are the kind of
picture it recorded; otherwise the page says what changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from audit_app.models import AuditEvent
from tools_app.builtin.pictures import (
    SVG,
    KeptPicture,
    PictureCheck,
    kept_pictures,
    picture_check,
)
from trust_app.models import Agent


@dataclass(frozen=True, slots=True)
class EventPicture:
    """One picture of an audit row, with its place in the row's list and its state."""

    event_id: int
    index: int
    check: PictureCheck

    @property
    def picture(self) -> KeptPicture:
        return self.check.picture

    @property
    def path(self) -> str:
        return self.check.picture.path

    @property
    def sha256(self) -> str:
        return self.check.picture.sha256

    @property
    def label(self) -> str:
        return self.check.picture.label

    @property
    def shown(self) -> bool:
        return self.check.shown

    @property
    def is_svg(self) -> bool:
        return self.check.picture.media_type == SVG


def event_kept_pictures(event: AuditEvent) -> tuple[KeptPicture, ...]:
    """What ``event`` says it kept, without looking at the files."""
    if event.agent_id is None:
        return ()
    return kept_pictures(event.kind, event.outcome, event.data)


def _workspace(event: AuditEvent) -> str | None:
    if event.agent_id is None:
        return None
    agent = Agent.objects.filter(id=event.agent_id).only("workspace").first()
    return agent.workspace if agent is not None else None


def event_pictures(event: AuditEvent) -> list[EventPicture]:
    """Every picture ``event`` names, each checked against the file there now."""
    kept = event_kept_pictures(event)
    if not kept:
        return []
    workspace = _workspace(event)
    return [
        EventPicture(event.id, index, picture_check(workspace, picture))
        for index, picture in enumerate(kept)
    ]


def event_picture_bytes(event: AuditEvent, index: int = 0) -> PictureCheck | None:
    """Picture ``index`` of ``event`` with its bytes, when they are still the recorded
    ones; None otherwise (none, changed, a link, not a picture)."""
    kept = event_kept_pictures(event)
    if not 0 <= index < len(kept):
        return None
    check = picture_check(_workspace(event), kept[index])
    return check if check.shown else None
