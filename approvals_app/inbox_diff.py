"""The inbox's resync as a difference: only the rows a page does not already show right.

A page that has just rendered the inbox holds every pending request; sending all of
them again on the socket's connect doubled the work of a large inbox (rendered twice,
swapped twice, the toolbar's selection and reason lost). The page's socket asks for a
difference instead (``?view=inbox&resync=diff``) and, once open, says what it shows:
``{"have": [[request id, status, escalated], ...]}``. The answer is the count, the
held-tools notice, the promotions, and then only:

- pending requests the page lacks, appended to their risk group;
- requests the page shows otherwise than the database has them (settled since, or
  escalated since), replaced by id.

The page's own list is exact, so nothing depends on clocks. A socket that says nothing
within ``SYNTHORG_INBOX_HAVE_WAIT_SECONDS``, or says something unreadable, gets the
whole inbox as before (``live.resync_frames``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings

from approvals_app.live import (
    is_admin,
    pending_count_html,
    pending_promotion_rows,
    promotion_row_html,
    row_batches,
    row_html,
    upstream_held_html,
)
from approvals_app.models import ApprovalRequest, ApprovalStatus
from approvals_app.selectors.requests import approval_requests, approvals_pending_by_risk

Shown = tuple[str, bool]
"""How a page shows one request: its status and whether it is marked escalated."""


def parse_have(text: str, *, max_rows: int | None = None) -> dict[str, Shown] | None:
    """The page's ``have`` message as ``{request id: (status, escalated)}``; None when the
    message is not one (then the whole inbox is sent). Entries that are not a request id
    are left out: the page only ever holds ids the server rendered."""
    limit = settings.SYNTHORG_INBOX_HAVE_MAX_ROWS if max_rows is None else max_rows
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return None
    rows = message.get("have") if isinstance(message, dict) else None
    if not isinstance(rows, list) or len(rows) > limit:
        return None
    have: dict[str, Shown] = {}
    for row in rows:
        if not (isinstance(row, list) and len(row) == 3 and isinstance(row[1], str)):
            return None
        try:
            request_id = str(uuid.UUID(str(row[0])))
        except ValueError:
            continue
        have[request_id] = (row[1], bool(row[2]))
    return have


def diff_frames(user: Any, have: Mapping[str, Shown], *, frame_bytes: int = -1) -> list[str]:
    """What ``user``'s page lacks or shows wrongly, as socket frames of at most
    ``frame_bytes`` (the setting by default) unless one row is larger on its own."""
    budget = settings.SYNTHORG_INBOX_FRAME_BYTES if frame_bytes == -1 else frame_bytes
    admin = is_admin(user)
    head = [pending_count_html(), upstream_held_html(user), _promotions_html(user)]
    pieces: list[str] = []
    pending: set[str] = set()
    for tier, requests in approvals_pending_by_risk():
        missing: list[str] = []
        for request in requests:
            key = str(request.id)
            pending.add(key)
            shown = have.get(key)
            if shown is None:
                missing.append(row_html(request, user))
            elif shown != (ApprovalStatus.PENDING.value, admin and bool(request.escalated_at)):
                pieces.append(row_html(request, user, oob="true"))
        pieces.extend(row_batches(tier, missing, budget))
    gone = [key for key, (status, _) in have.items() if status == "pending" and key not in pending]
    pieces.extend(row_html(request, user, oob="true") for request in _requests(gone))
    return _pack("".join(head), pieces, budget)


def _requests(ids: Iterable[str]) -> list[ApprovalRequest]:
    wanted = list(ids)
    return list(approval_requests().filter(id__in=wanted)) if wanted else []


def _promotions_html(user: Any) -> str:
    rows = "".join(promotion_row_html(p, user) for p in pending_promotion_rows())
    return f'<div class="rows" id="promotion-rows" hx-swap-oob="true">{rows}</div>'


def _pack(head: str, pieces: list[str], budget: int) -> list[str]:
    """``head`` and then ``pieces`` (each a whole out-of-band swap) in as few frames of at
    most ``budget`` bytes as they fit in; a piece larger than that goes alone."""
    frames: list[str] = []
    current, size = [head], len(head.encode())
    for piece in pieces:
        piece_size = len(piece.encode())
        if size + piece_size > budget and current:
            frames.append("".join(current))
            current, size = [], 0
        current.append(piece)
        size += piece_size
    if current:
        frames.append("".join(current))
    return frames
