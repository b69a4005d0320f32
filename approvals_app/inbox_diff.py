"""The inbox's resync as a difference: only what a page does not already show right.

A page that has just rendered the inbox holds its first screen; sending it again on the
socket's connect doubled the work of a large inbox (rendered twice, swapped twice, the
person's selection lost). The page's socket asks for a difference instead
(``?view=inbox&resync=diff``) and, once open, says what it shows::

    {"have": [[request id, status, escalated], ...],      # the rows it renders
     "groups": {group key: [request id, ...], ...},       # the ids each group counts
     "through": {tier: "end" | cursor | "", ...}}         # how far each tier is loaded

The answer is the counts, the held-tools notice, the promotions, and then only, within
what the page has loaded of each tier (a page asks for the rest with "show more"):

- entries the page lacks, appended to their risk tier;
- pending requests of an entry the page shows in part, appended (the page puts them in
  their group), or the entry as a group when more of it came than a group shows at once;
- each group's ids as they are now (the page counts them);
- requests the page shows otherwise than the database has them (settled since, or
  escalated since), replaced by id.

The page's own list is exact, so nothing depends on clocks. A socket that says nothing
within ``SYNTHORG_INBOX_HAVE_WAIT_SECONDS``, or says something unreadable, gets the
first screen as on load (``live.resync_frames``). A page that sends no ``through`` is
taken to have loaded everything.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from django.conf import settings
from django.template.loader import render_to_string

from approvals_app.grouping import InboxEntry, entry_position, parse_cursor
from approvals_app.live import (
    INBOX_VIEW,
    TEMPLATE,
    counts_html,
    decider_scope,
    entry_html,
    is_admin,
    pending_promotion_rows,
    promotion_row_html,
    row_batches,
    row_html,
    upstream_held_html,
    viewer_context,
)
from approvals_app.models import ApprovalRequest, ApprovalStatus
from approvals_app.selectors.inbox import (
    TIERS,
    entry_views,
    inbox_entries_now,
    inbox_setting,
    loaded_requests,
)
from approvals_app.selectors.requests import approval_requests
from common.team_scope import TeamScope

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


END: Final = "end"
_GROUP_KEY = re.compile(r"^[0-9a-f]{16}$")
Position = tuple[int, int, str]


@dataclass(frozen=True)
class PageState:
    """What a page holds beyond its rows: each group's ids, and how far each tier is loaded
    (None: all of it; a position: through that entry; absent tier: nothing)."""

    groups: Mapping[str, frozenset[str]]
    through: Mapping[str, Position | None]

    def limit(self, tier: str) -> Position | bool | None:
        """None: everything loaded; False: nothing; else the last entry's position."""
        if tier not in self.through:
            return False
        return self.through[tier]


def _ids(values: Any) -> frozenset[str] | None:
    if not isinstance(values, list):
        return None
    found = set()
    for value in values:
        try:
            found.add(str(uuid.UUID(str(value))))
        except ValueError:
            continue
    return frozenset(found)


def parse_page(text: str, *, max_rows: int | None = None) -> PageState | None:
    """The ``groups`` and ``through`` of a page's message; None when it has none or they
    cannot be read (the page is then taken to hold everything it lists)."""
    limit = settings.SYNTHORG_INBOX_HAVE_MAX_ROWS if max_rows is None else max_rows
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or not isinstance(message.get("through"), dict):
        return None
    through: dict[str, Position | None] = {}
    for tier, value in message["through"].items():
        if tier not in TIERS or not isinstance(value, str):
            return None
        if value == "":
            continue  # nothing of this tier loaded
        position = None if value == END else parse_cursor(value)
        if value != END and position is None:
            return None
        through[tier] = position
    groups: dict[str, frozenset[str]] = {}
    raw = message.get("groups", {})
    if not isinstance(raw, dict):
        return None
    total = 0
    for key, values in raw.items():
        ids = _ids(values)
        if not isinstance(key, str) or not _GROUP_KEY.match(key) or ids is None:
            return None
        total += len(ids)
        groups[key] = ids
    if total > limit:
        return None
    return PageState(groups=groups, through=through)


def _in_range(entry: InboxEntry, limit: Position | bool | None) -> bool:
    if limit is None:
        return True
    if limit is False or limit is True:
        return False
    return entry_position(entry) <= limit


def group_ids_html(key: str, ids: Iterable[str]) -> str:
    """A group's ids as they are now (none: the group is gone), as an out-of-band swap."""
    return render_to_string(
        f"{TEMPLATE}#group-ids", {"key": key, "ids": " ".join(ids), "oob": True}
    )


def diff_frames(
    user: Any,
    have: Mapping[str, Shown],
    page: PageState | None = None,
    *,
    frame_bytes: int = -1,
) -> list[str]:
    """What ``user``'s page lacks or shows wrongly, as socket frames of at most
    ``frame_bytes`` (the setting by default) unless one entry is larger on its own."""
    budget = settings.SYNTHORG_INBOX_FRAME_BYTES if frame_bytes == -1 else frame_bytes
    admin = is_admin(user)
    scope = decider_scope(user)
    viewer = viewer_context(user)
    state = page or PageState(groups={}, through=dict.fromkeys(TIERS))
    head = [counts_html(INBOX_VIEW, scope), upstream_held_html(user), _promotions_html(user)]
    known = set(have).union(*state.groups.values())
    group_page = inbox_setting("GROUP_PAGE")
    pieces: list[str] = []
    pending: set[str] = set()
    keys: set[str] = set()
    for tier, entries in inbox_entries_now(scope).items():
        limit = state.limit(tier)
        lacking: list[InboxEntry] = []
        missing: list[str] = []
        for entry in entries:
            keys.add(entry.key)
            pending.update(entry.ids)
            present = any(i in known for i in entry.ids)
            if not (present or _in_range(entry, limit)):
                continue  # beyond what the page has loaded: its "show more" brings it
            unknown = [i for i in entry.ids if i not in known]
            if entry.key in state.groups:
                pieces.append(group_ids_html(entry.key, entry.ids))
            elif present and len(unknown) <= group_page:
                missing.extend(unknown)
            else:
                # Not on the page, or a flood of it since: the entry itself (a group takes
                # in the rows the page has of it).
                lacking.append(entry)
        rendered = [entry_html(v, user, viewer=viewer) for v in entry_views(lacking, scope)]
        rows = loaded_requests(missing, scope)
        rendered += [row_html(rows[i], user) for i in missing if i in rows]
        pieces.extend(row_batches(tier, rendered, budget))
    pieces.extend(group_ids_html(key, ()) for key in state.groups if key not in keys)
    shown_pending = [k for k, (status, _) in have.items() if status == ApprovalStatus.PENDING]
    escalated = dict(
        ApprovalRequest.objects.filter(
            id__in=[k for k in shown_pending if k in pending]
        ).values_list("id", "escalated_at")
    )
    wrong = [
        k
        for k in shown_pending
        if k in pending and have[k][1] != (admin and escalated.get(uuid.UUID(k)) is not None)
    ]
    gone = [k for k in shown_pending if k not in pending]
    settled = _requests(wrong + gone, scope)
    pieces.extend(row_html(request, user, oob="true") for request in settled)
    return _pack("".join(head), pieces, budget)


def _requests(ids: Iterable[str], scope: TeamScope) -> list[ApprovalRequest]:
    wanted = list(ids)
    return list(approval_requests(scope=scope).filter(id__in=wanted)) if wanted else []


def _promotions_html(user: Any) -> str:
    rows = "".join(promotion_row_html(p, user) for p in pending_promotion_rows(decider_scope(user)))
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
