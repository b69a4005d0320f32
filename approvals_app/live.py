"""HTML fragments for the live inbox: what a page shows on load, on reconnect and on a change.

Everything is read from the database at the moment of rendering, so a browser
that reconnects gets the current state, never a replay of the socket. The inbox
holds two kinds of request: approval requests for calls, and promotion requests
a trust strategy made that need a person.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import timezone

from approvals_app.models import ApprovalRequest, ApprovalStatus
from approvals_app.selectors.requests import (
    approval_grants,
    approval_request,
    approvals_pending_by_risk,
    inbox_pending_count,
    promotion_request,
)
from common.inbox import ApprovalChange, InboxKind
from common.roles import ROLES_THAT_DECIDE, Role, has_any_role, roles_of
from tools_app.bridge.selectors import held_upstream_tools

TEMPLATE = "approvals/inbox.html"
INBOX_VIEW = "inbox"


def can_decide(user: Any) -> bool:
    """True for signed-in operators and admins."""
    return has_any_role(user, ROLES_THAT_DECIDE)


def _viewer(user: Any) -> dict[str, Any]:
    return {"viewer": user, "viewer_is_admin": Role.ADMIN in roles_of(user), "now": timezone.now()}


def pending_promotion_rows() -> list[Any]:
    """Promotion requests waiting for a person, oldest first."""
    from trust_app.selectors.trust import pending_promotions

    return list(pending_promotions())


def inbox_context(user: Any) -> dict[str, Any]:
    """Everything the inbox page renders."""
    return {
        **_viewer(user),
        "groups": approvals_pending_by_risk(),
        "promotions": pending_promotion_rows(),
        "pending_count": inbox_pending_count(),
        "grants": list(approval_grants()[:100]),
        "held_upstream": held_upstream_tools(),
    }


def pending_count_html(*, oob: bool = True) -> str:
    """The navigation's pending count, as an out-of-band swap."""
    return render_to_string(
        f"{TEMPLATE}#pending-count", {"pending_count": inbox_pending_count(), "oob": oob}
    )


def row_html(request: ApprovalRequest, user: Any, *, oob: str = "") -> str:
    """One request's row (pending or settled) for ``user``."""
    return render_to_string(f"{TEMPLATE}#row", {**_viewer(user), "request": request, "oob": oob})


def promotion_row_html(promotion: Any, user: Any, *, oob: str = "") -> str:
    """One promotion request's row (pending or settled) for ``user``."""
    return render_to_string(
        f"{TEMPLATE}#promotion-row", {**_viewer(user), "promotion": promotion, "oob": oob}
    )


def shared_row(request: ApprovalRequest, change: str) -> dict[str, Any]:
    """The row as operators see it, rendered once by the publisher, and who sees it otherwise.

    ``owner_id`` names the person barred from deciding it (they see a note instead
    of the buttons); ``admins_differ`` says admins see an escalation flag.
    """
    pending = request.status == ApprovalStatus.PENDING
    oob = f"beforeend:#risk-{request.risk_tier}" if change == ApprovalChange.NEW and pending else ""
    context = {
        "viewer": None,
        "viewer_is_admin": False,
        "now": timezone.now(),
        "request": request,
        "oob": oob or "true",
    }
    barred = pending and not request.owner_may_approve
    return {
        "html": render_to_string(f"{TEMPLATE}#row", context),
        "owner_id": request.invocation.agent.owner_id if barred else None,
        "admins_differ": bool(pending and request.escalated_at),
    }


def shared_row_fits(event: dict[str, Any], user: Any, is_admin: bool) -> bool:
    """True when the row rendered by the publisher is what ``user`` would see."""
    owner_id = event.get("owner_id")
    if owner_id is not None and owner_id == getattr(user, "pk", None):
        return False
    return not (event.get("admins_differ") and is_admin)


def is_admin(user: Any) -> bool:
    """True for admins (they see escalation flags)."""
    return Role.ADMIN in roles_of(user)


def resync_html(user: Any, view: str) -> str:
    """What a socket sends on (re)connect: the count, and the whole inbox on its page."""
    return "".join(resync_frames(user, view, frame_bytes=None))


def resync_frames(user: Any, view: str, *, frame_bytes: int | None = -1) -> list[str]:
    """The resync as socket frames, each at most ``frame_bytes`` (the setting by default)
    unless a single request's row is larger on its own.

    The server refuses to send a message past its limit (1 MiB), and a backlog of a few
    hundred writes with their diffs is larger: the socket would close on every connect
    and the inbox never come back. An inbox that fits goes in one frame; a larger one
    goes as its frame with the groups empty, then the pending rows appended in batches.
    """
    budget = settings.SYNTHORG_INBOX_FRAME_BYTES if frame_bytes == -1 else frame_bytes
    count = pending_count_html()
    if view != INBOX_VIEW:
        return [count]
    context = inbox_context(user)
    held = upstream_held_html(user)
    groups = context["groups"]
    empty = {**context, "groups": [(tier, []) for tier, _ in groups], "oob": True}
    frame = count + render_to_string(f"{TEMPLATE}#inbox", empty) + held
    # Each row is rendered once, all with one viewer; the sizes decide between one
    # frame and several.
    viewer = _viewer(user)
    rows = [
        (tier, [render_to_string(f"{TEMPLATE}#row", {**viewer, "request": r}) for r in requests])
        for tier, requests in groups
    ]
    total = len(frame.encode()) + sum(len(row.encode()) for _, rendered in rows for row in rendered)
    if budget is None or total <= budget:
        whole = render_to_string(f"{TEMPLATE}#inbox", {**context, "oob": True})
        return [count + whole + held]
    frames = [frame]
    for tier, rendered in rows:
        frames.extend(row_batches(tier, rendered, budget))
    return frames


def row_batches(tier: str, rendered: Sequence[str], budget: int) -> list[str]:
    """``rendered`` rows appended to their group's list, in frames of at most ``budget``."""
    opening, closing = f'<div hx-swap-oob="beforeend:#risk-{tier}">', "</div>"
    batches: list[str] = []
    rows: list[str] = []
    size = len(opening) + len(closing)
    for row in rendered:
        row_size = len(row.encode())
        if rows and size + row_size > budget:
            batches.append(opening + "".join(rows) + closing)
            rows, size = [], len(opening) + len(closing)
        rows.append(row)
        size += row_size
    if rows:
        batches.append(opening + "".join(rows) + closing)
    return batches


def upstream_held_html(user: Any) -> str:
    """The notice of upstream tools held for an admin (empty when none), as an OOB swap."""
    context = {**_viewer(user), "held_upstream": held_upstream_tools(), "oob": True}
    return render_to_string(f"{TEMPLATE}#upstream-held", context)


def _promotion_change_html(user: Any, promotion_id: str, change: str) -> str:
    promotion = promotion_request(promotion_id)
    if promotion is None:
        return ""
    if change == ApprovalChange.NEW and promotion.status == "pending":
        return promotion_row_html(promotion, user, oob="beforeend:#promotion-rows")
    return promotion_row_html(promotion, user, oob="true")


def change_html(
    user: Any, view: str, request_id: str, change: str, kind: str = InboxKind.APPROVAL
) -> str:
    """What a socket sends when request ``request_id`` (of ``kind``) changed."""
    parts = [pending_count_html()]
    if view != INBOX_VIEW:
        return parts[0]
    if kind == InboxKind.PROMOTION:
        return parts[0] + _promotion_change_html(user, request_id, change)
    request = approval_request(request_id)
    if request is None:
        return parts[0]
    if change == ApprovalChange.NEW and request.status == ApprovalStatus.PENDING:
        parts.append(row_html(request, user, oob=f"beforeend:#risk-{request.risk_tier}"))
    else:
        parts.append(row_html(request, user, oob="true"))
    return "".join(parts)
