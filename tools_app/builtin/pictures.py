"""Pictures kept as evidence: where a tool's audit row says a picture is, and whether the
file there is still that picture.

A tool that leaves a picture in the agent's workspace (a screenshot, a diff, a chart,
a mockup) writes an audit row naming its path and SHA-256 (``picture_record``); the
bytes stay in the workspace, never in the database. Whoever shows it later reads the
file without following links, as a regular file, never waiting on a FIFO
(``read_screenshot``), and shows it only when its digest is still the recorded one;
otherwise it says what changed (``PictureState``).

An SVG is shown only as an image (it can carry script): its bytes are served with a
sandboxing Content-Security-Policy by the views, never as a document of the console.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from django.db import transaction

from audit_app.record import Actor, audit_record
from tools_app.builtin.base import ToolContext, ToolFailedError
from tools_app.builtin.design.formats import PictureFormatError, picture_format
from tools_app.builtin.desktop.screenshots import read_screenshot
from trust_app.models import Agent

SVG: Final = "image/svg+xml"
RASTER: Final = frozenset({"image/png", "image/jpeg", "image/webp"})
MAX_SHOWN_BYTES: Final = 16 * 1024 * 1024
# The audit rows that name pictures, and the folder each picture of theirs must be in
# ("" for files the agent named itself, anywhere in its workspace).
PICTURE_FOLDERS: Final = MappingProxyType(
    {
        "design.image_generate": {"": ".synthorg/images/"},
        "design.mockup_render": {"": ".synthorg/mockups/"},
        "browser.screenshot": {"screenshot": ".synthorg/screenshots/"},
        "browser.diff": {"baseline": "", "candidate": "", "diff": ".synthorg/screenshots/"},
        "analytics.chart_render": {"png": ".synthorg/charts/", "svg": ".synthorg/charts/"},
    }
)
STORED: Final = "stored"
_DIGEST: Final = re.compile(r"[0-9a-f]{64}")
_SVG_START: Final = re.compile(
    rb"^\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*)*(<!DOCTYPE[^>]*>\s*)?<svg[\s>]", re.S
)


class PictureState(StrEnum):
    """What the file at a picture's path is now."""

    SHOWN = "shown"  # the recorded bytes
    CHANGED = "changed"  # another picture or file since the call
    MISSING = "missing"  # no longer there
    REFUSED = "refused"  # a link, a FIFO, a folder, too large or not a picture


@dataclass(frozen=True, slots=True)
class KeptPicture:
    """One picture an audit row names (its path relative to the agent's workspace)."""

    label: str
    path: str
    sha256: str
    media_type: str


@dataclass(frozen=True, slots=True)
class PictureCheck:
    """A kept picture as it stands now: its bytes when they are the recorded ones."""

    picture: KeptPicture
    state: PictureState
    note: str = ""
    data: bytes = b""

    @property
    def shown(self) -> bool:
        return self.state is PictureState.SHOWN


def _relative(path: object, folder: str) -> str | None:
    if not isinstance(path, str) or not path or path.startswith("/") or "\x00" in path:
        return None
    if any(part in ("", ".", "..") for part in path.split("/")):
        return None
    return path if path.startswith(folder) else None


def kept_pictures(kind: str, outcome: str, data: object) -> tuple[KeptPicture, ...]:
    """The pictures an audit row of ``kind`` names: a design row's one ``path`` and
    ``sha256``, or the ``pictures`` list the other tools write; malformed entries and
    paths outside their folder are left out."""
    folders = PICTURE_FOLDERS.get(kind)
    if folders is None or outcome != STORED or not isinstance(data, Mapping):
        return ()
    entries: Iterable[object] = data.get("pictures") or ()
    if "" in folders:
        entries = [{**data, "label": ""}]
    kept: list[KeptPicture] = []
    for entry in entries if isinstance(entries, list | tuple) else ():
        if not isinstance(entry, Mapping):
            continue
        label = str(entry.get("label", ""))
        folder = folders.get(label)
        path = _relative(entry.get("path"), folder) if folder is not None else None
        digest = entry.get("sha256")
        if path is None or not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            continue
        # An SVG is known by its name alone; a raster picture's kind is read from its bytes.
        media_type = SVG if path.endswith(".svg") else str(entry.get("media_type") or "")
        kept.append(KeptPicture(label, path, digest, media_type))
    return tuple(kept)


def _media_type(picture: KeptPicture, data: bytes) -> str | None:
    """The bytes' own media type, when it is the kind the row recorded."""
    if picture.media_type == SVG:
        return SVG if _SVG_START.match(data[:4096]) else None
    try:
        media_type = picture_format(data).media_type
    except PictureFormatError:
        return None
    return media_type if media_type in RASTER else None


def picture_check(workspace: str | Path | None, picture: KeptPicture) -> PictureCheck:
    """``picture`` as the file at its path is now (read without following links)."""
    if not workspace:
        return PictureCheck(picture, PictureState.MISSING, "the agent has no workspace now")
    try:
        data = read_screenshot(Path(workspace), picture.path)
    except ToolFailedError as exc:
        cause = exc.__cause__
        code = cause.errno if isinstance(cause, OSError) else None
        if code == errno.ENOENT:
            return PictureCheck(picture, PictureState.MISSING, "no longer in the workspace")
        if code in (errno.ELOOP, errno.ENOTDIR):
            note = "a link stands where the picture (or its folder) was: not followed"
            return PictureCheck(picture, PictureState.REFUSED, note)
        return PictureCheck(picture, PictureState.REFUSED, f"not shown: {exc.message}")
    except OSError as exc:
        return PictureCheck(picture, PictureState.REFUSED, f"not readable: {exc.strerror}")
    if len(data) > MAX_SHOWN_BYTES:
        return PictureCheck(picture, PictureState.REFUSED, "too large to show")
    digest = hashlib.sha256(data).hexdigest()
    if digest != picture.sha256:
        note = f"changed since the call: the file now has SHA-256 {digest}"
        return PictureCheck(picture, PictureState.CHANGED, note)
    if _media_type(picture, data) is None:
        return PictureCheck(picture, PictureState.REFUSED, "not a picture this console shows")
    return PictureCheck(picture, PictureState.SHOWN, data=data)


def svg_check(picture: KeptPicture, data: bytes) -> PictureCheck:
    """An SVG given as it is (a call's own argument): shown when it is one, within bounds."""
    if len(data) > MAX_SHOWN_BYTES:
        return PictureCheck(picture, PictureState.REFUSED, "too large to show")
    if not _SVG_START.match(data[:4096]):
        return PictureCheck(picture, PictureState.REFUSED, "not an SVG picture")
    return PictureCheck(picture, PictureState.SHOWN, data=data)


def read_kept(context: ToolContext, path: str, *, what: str, code: str) -> tuple[str, bytes]:
    """``(sha256, bytes)`` of the file a tool's sandbox just wrote at ``path``, read back
    by the worker (links not followed), so the row records what is really there."""
    relative = _relative(path, "")
    if relative is None:
        raise ToolFailedError(f"{what} was saved at an unexpected place", code=code)
    try:
        data = read_screenshot(context.workspace, relative)
    except ToolFailedError as exc:
        raise ToolFailedError(f"{what}: {exc.message}", code=code) from exc
    return hashlib.sha256(data).hexdigest(), data


def workspace_relative(workspace: str | Path, shown: str) -> str | None:
    """A path as a tool showed it (relative, or absolute inside the workspace), relative
    to the workspace; None when it is elsewhere."""
    if not shown.startswith("/"):
        return _relative(shown.removeprefix("./"), "")
    root = os.path.realpath(workspace)
    if not shown.startswith(root + "/"):
        return None
    return _relative(shown[len(root) + 1 :], "")


def picture_record(
    context: ToolContext,
    *,
    kind: str,
    tool: str,
    category: str,
    action_type: str,
    pictures: Sequence[Mapping[str, str]],
    reason: str,
    data: Mapping[str, Any] | None = None,
) -> None:
    """The call's audit row naming the pictures it left (label, path, SHA-256, media
    type): what audit pages and approval cards check the files against later. A tool
    run outside an invocation (no call to join the row to) records nothing."""
    if context.invocation_uuid is None:
        return
    agent = Agent.objects.get(id=context.agent_id)
    with transaction.atomic():
        audit_record(
            kind=kind,
            actor=Actor.agent(agent),
            agent=agent,
            invocation_id=context.invocation_uuid,
            tool=tool,
            category=category,
            action_type=action_type,
            outcome=STORED,
            reason=reason,
            data={**(data or {}), "pictures": [dict(p) for p in pictures]},
        )


def picture_index(raw: str | None) -> int | None:
    """Which of a row's pictures ``?n=`` asks for (the first without it); None when
    it is not a small whole number."""
    if raw is None:
        return 0
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 3 else None


def picture_response_headers(check: PictureCheck) -> dict[str, str]:
    """The headers a picture is served with from the console's origin: an image, never
    sniffed as anything else, and never a document that runs script (an SVG opened on its
    own is sandboxed: no script, an origin of its own)."""
    media_type = _media_type(check.picture, check.data) or "application/octet-stream"
    style = "; style-src 'unsafe-inline'" if media_type == SVG else ""
    return {
        "Content-Type": media_type,
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": f"default-src 'none'{style}; sandbox",
        "Content-Disposition": "inline",
        "Cache-Control": "private, no-store",
        "Cross-Origin-Resource-Policy": "same-origin",
    }
