"""HTML fragments for the live inbox: what a page shows on load, on reconnect and on a change.

Everything is read from the database at the moment of rendering, so a browser
that reconnects gets the current state, never a replay of the socket. The inbox
holds two kinds of request: approval requests for calls, and promotion requests
a trust strategy made that need a person. Alike approval requests are one entry
(a group); a page shows the first entries and asks for the rest
(``selectors.inbox``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import timezone

from approvals_app.models import ApprovalRequest, ApprovalStatus
from approvals_app.selectors.inbox import (
    EntryView,
    TierPage,
    inbox_facets,
    inbox_first_page,
    inbox_waiting,
)
from approvals_app.selectors.requests import (
    approval_grants,
    approval_request,
    inbox_pending_count,
    promotion_request,
)
from common.inbox import ApprovalChange, InboxKind
from common.roles import ROLES_THAT_DECIDE, Role, has_any_role, roles_of
from common.team_scope import DECIDE, EVERYWHERE, TeamScope
from tools_app.bridge.selectors import held_upstream_tools
from trust_app.selectors.teams import person_scope, team_q

TEMPLATE = "approvals/inbox.html"
INBOX_VIEW = "inbox"


def can_decide(user: Any) -> bool:
    """True for signed-in operators and admins."""
    return has_any_role(user, ROLES_THAT_DECIDE)


def decider_scope(user: Any) -> TeamScope:
    """The teams whose requests ``user`` sees and decides."""
    return person_scope(user, DECIDE)


def viewer_context(user: Any) -> dict[str, Any]:
    return {"viewer": user, "viewer_is_admin": Role.ADMIN in roles_of(user), "now": timezone.now()}


def pending_promotion_rows(scope: TeamScope = EVERYWHERE) -> list[Any]:
    """Promotion requests (of the teams ``scope`` admits) waiting for a person, oldest first."""
    from trust_app.selectors.trust import pending_promotions

    return list(pending_promotions().filter(team_q(scope, "agent__team_id")))


def inbox_context(user: Any) -> dict[str, Any]:
    """Everything the inbox page renders: its first screen of entries, tier by tier, of
    the teams whose requests ``user`` decides."""
    scope = decider_scope(user)
    return {
        **viewer_context(user),
        "tiers": inbox_first_page(scope=scope),
        "facets": inbox_facets(scope),
        "promotions": pending_promotion_rows(scope),
        "pending_count": inbox_pending_count(scope),
        "grants": list(approval_grants(scope=scope)[:100]),
        "held_upstream": held_upstream_tools(),
    }


def pending_count_html(*, oob: bool = True, scope: TeamScope = EVERYWHERE) -> str:
    """The navigation's pending count, as an out-of-band swap."""
    return render_to_string(
        f"{TEMPLATE}#pending-count", {"pending_count": inbox_pending_count(scope), "oob": oob}
    )


def waiting_html(*, with_badge: bool = False, scope: TeamScope = EVERYWHERE) -> str:
    """How many requests wait in each risk tier (and in all, for the navigation's badge),
    as out-of-band swaps, from one count."""
    waiting = inbox_waiting(scope)
    tiers = "".join(
        render_to_string(f"{TEMPLATE}#waiting", {"tier": tier, "n": n, "oob": True})
        for tier, n in waiting.tiers.items()
    )
    if not with_badge:
        return tiers
    context = {"pending_count": waiting.total, "oob": True}
    return render_to_string(f"{TEMPLATE}#pending-count", context) + tiers


def counts_html(view: str, scope: TeamScope = EVERYWHERE) -> str:
    """The counts a socket sends with every change: the badge, and on the inbox each tier's."""
    if view == INBOX_VIEW:
        return waiting_html(with_badge=True, scope=scope)
    return pending_count_html(scope=scope)


def entry_html(view: EntryView, user: Any, *, viewer: dict[str, Any] | None = None) -> str:
    """One inbox entry: a request's row, or a group with its first request's card."""
    context = {
        **(viewer or viewer_context(user)),
        "ev": view,
        "e": view.entry,
        "request": view.request,
    }
    return render_to_string(f"{TEMPLATE}#entry", context)


def tier_more_html(page: TierPage, *, oob: bool = False) -> str:
    """The tier's "show more" control (empty when the tier is all shown)."""
    return render_to_string(f"{TEMPLATE}#tier-more", {"page": page, "oob": oob})


def row_html(request: ApprovalRequest, user: Any, *, oob: str = "") -> str:
    """One request's row (pending or settled) for ``user``."""
    return render_to_string(
        f"{TEMPLATE}#row", {**viewer_context(user), "request": request, "oob": oob}
    )


def promotion_row_html(promotion: Any, user: Any, *, oob: str = "") -> str:
    """One promotion request's row (pending or settled) for ``user``."""
    return render_to_string(
        f"{TEMPLATE}#promotion-row", {**viewer_context(user), "promotion": promotion, "oob": oob}
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
        "team_id": str(request.invocation.agent.team_id),
    }


def shared_row_fits(
    event: dict[str, Any], user: Any, is_admin: bool, scope: TeamScope = EVERYWHERE
) -> bool:
    """True when the row rendered by the publisher is what ``user`` would see (a row
    of a team outside ``scope`` never is: the database then says whether to show it)."""
    if not scope.admits(event.get("team_id")):
        return False
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
    unless a single entry is larger on its own.

    The server refuses to send a message past its limit (1 MiB), and a first screen of
    large writes with their diffs can be larger: the socket would close on every connect
    and the inbox never come back. An inbox that fits goes in one frame; a larger one
    goes as its frame with the tiers empty, then the entries appended in batches.
    """
    budget = settings.SYNTHORG_INBOX_FRAME_BYTES if frame_bytes == -1 else frame_bytes
    count = pending_count_html(scope=decider_scope(user))
    if view != INBOX_VIEW:
        return [count]
    context = inbox_context(user)
    held = upstream_held_html(user)
    tiers: list[TierPage] = context["tiers"]
    empty_tiers = [TierPage(p.tier, [], p.waiting, p.more) for p in tiers]
    frame = (
        count
        + render_to_string(f"{TEMPLATE}#inbox", {**context, "tiers": empty_tiers, "oob": True})
        + held
    )
    # Each entry is rendered once, all with one viewer; the sizes decide between one
    # frame and several.
    viewer = viewer_context(user)
    rendered = [
        (page.tier, [entry_html(e, user, viewer=viewer) for e in page.entries]) for page in tiers
    ]
    total = len(frame.encode()) + sum(len(r.encode()) for _, rows in rendered for r in rows)
    if budget is None or total <= budget:
        whole = render_to_string(f"{TEMPLATE}#inbox", {**context, "oob": True})
        return [count + whole + held]
    frames = [frame]
    for tier, rows in rendered:
        frames.extend(row_batches(tier, rows, budget))
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
    context = {**viewer_context(user), "held_upstream": held_upstream_tools(), "oob": True}
    return render_to_string(f"{TEMPLATE}#upstream-held", context)


def _promotion_change_html(user: Any, promotion_id: str, change: str) -> str:
    promotion = promotion_request(promotion_id, scope=decider_scope(user))
    if promotion is None:
        return ""
    if change == ApprovalChange.NEW and promotion.status == "pending":
        return promotion_row_html(promotion, user, oob="beforeend:#promotion-rows")
    return promotion_row_html(promotion, user, oob="true")


def change_seen(scope: TeamScope, request_id: str, kind: str = InboxKind.APPROVAL) -> bool:
    """Whether a person of ``scope`` hears of a change of request ``request_id``: when its
    agent's team is theirs (or the request is gone: their counts may have changed)."""
    if scope.everywhere:
        return True
    from trust_app.models import PromotionRequest

    try:
        if kind == InboxKind.PROMOTION:
            promotions = PromotionRequest.objects.filter(id=request_id)
            team = promotions.values_list("agent__team_id", flat=True).first()
        else:
            approvals = ApprovalRequest.objects.filter(id=request_id)
            team = approvals.values_list("invocation__agent__team_id", flat=True).first()
    except (ValueError, TypeError):
        return False
    return team is None or scope.admits(team)


def change_row_html(user: Any, request_id: str, change: str) -> str:
    """Request ``request_id``'s row after ``change``, for ``user`` (empty when it is gone,
    or of a team whose requests ``user`` does not decide)."""
    request = approval_request(request_id, scope=decider_scope(user))
    if request is None:
        return ""
    if change == ApprovalChange.NEW and request.status == ApprovalStatus.PENDING:
        return row_html(request, user, oob=f"beforeend:#risk-{request.risk_tier}")
    return row_html(request, user, oob="true")


def change_html(
    user: Any, view: str, request_id: str, change: str, kind: str = InboxKind.APPROVAL
) -> str:
    """What a socket sends when request ``request_id`` (of ``kind``) changed: nothing
    when it is another team's."""
    scope = decider_scope(user)
    if not change_seen(scope, request_id, kind):
        return ""
    counts = counts_html(view, scope)
    if view != INBOX_VIEW:
        return counts
    if kind == InboxKind.PROMOTION:
        return counts + _promotion_change_html(user, request_id, change)
    return counts + change_row_html(user, request_id, change)
